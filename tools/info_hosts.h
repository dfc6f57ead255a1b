/*
 * tutti-info --explain --hosts H: how the chosen implementation's steps
 * fall inside hosts and between them (info_hosts.c).
 */
#ifndef TUTTI_TOOLS_INFO_HOSTS_H
#define TUTTI_TOOLS_INFO_HOSTS_H

#include <stdio.h>

/** For @p impl on @p members members over @p hosts hosts (more than 1),
 *  the host order and the steps inside and between hosts, to @p out; an
 *  implementation without a known schedule gets one line saying so. */
void info_hosts_print(FILE *out, const char *impl, int members, int hosts);

#endif
