/*
 * Names of ops, collectives and device types for the core (internal): the
 * public tutti_op_name() and friends record an error for an invalid
 * value; these return NULL and record nothing, for messages the core
 * writes about values it may not have checked, so that a lookup never
 * replaces the cause already recorded.
 */
#ifndef TUTTI_CORE_BASE_TYPE_NAMES_H
#define TUTTI_CORE_BASE_TYPE_NAMES_H

#include <tutti/types.h>

const char *tutti__op_name(tutti_op_t op);
const char *tutti__collective_name(tutti_collective_t coll);
const char *tutti__device_type_name(tutti_device_type_t type);

#endif
