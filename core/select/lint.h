/*
 * Lint of a configuration file's selection rules (internal), for
 * tutti-info --lint: what a file gets wrong that loading it does not
 * refuse.  What the loaded modules provide reaches this file as a table,
 * so selection still knows no registry.
 */
#ifndef TUTTI_CORE_SELECT_LINT_H
#define TUTTI_CORE_SELECT_LINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

#include "config/config.h"

/** One loaded implementation, as the lint needs to know it. */
typedef struct {
    const char *name;
    const char *module;
    uint32_t collectives;          /* TUTTI_COLL_BIT mask */
    uint32_t per_rank_collectives; /* those it also runs with per-rank
                                      counts */
    uint32_t native_devices;       /* TUTTI_DEVICE_BIT: where it runs */
    uint32_t devices;              /* where it serves: those, and cuda too
                                      for a cpu one (the core stages) */
    int may_decline;               /* it has supports(), which may pass
                                      any call on to the next rule */
    int declares_params;           /* it lists the rule parameters it
                                      reads (ABI 1.5), so loading checked
                                      the rules' */
} tutti__lint_impl_t;

/**
 * Lint the rules of @p cfg that came from its file (those of TUTTI_ALGO
 * are left out) against the @p num_impls implementations @p impls, and
 * write one line per finding to @p out, "<file>:<line>:<column>: <what>;
 * <what was expected, or which earlier rule (<file>:<line>) covers it>",
 * in the order of the lines:
 *  - a rule naming an implementation no loaded module provides, or one
 *    that does not run the rule's collectives or devices;
 *  - a rule that never matches: earlier rules take every call it could
 *    match, or its group_size, num_tasks and hosts leave no call;
 *  - a rule with a size range that overlaps the range of an earlier rule
 *    alike in every other key (that one takes the overlap);
 *  - calls of a collective the file has rules for that no rule matches
 *    (sizes, devices, group sizes), at the rule where they start.
 * A rule whose implementation may decline calls (supports()) covers none
 * for the later rules.  A rule for device types no loaded module runs on
 * (cuda in a build without the nccl module) that names an implementation
 * not loaded gets a line "...: note: ..." instead, not counted; a rule
 * that gives parameters to an implementation that declares none (module
 * ABI 1.4 and older, or params NULL) a line "...: warning: ... declares
 * no params: not checked ...", not counted either.
 * @p findings_out gets the number of findings.  TUTTI_ERR_NO_MEMORY, with
 * nothing written, when memory runs out.
 */
tutti_status_t tutti__select_lint(const tutti__config_t *cfg,
                                  const tutti__lint_impl_t *impls,
                                  size_t num_impls, FILE *out,
                                  size_t *findings_out);

#endif
