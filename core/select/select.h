/*
 * Selection (internal): rules are data (config.h); the first rule that
 * matches a call and whose implementation can serve it picks that
 * implementation.  What a loaded module provides reaches this file through
 * callbacks, so selection knows no registry.
 */
#ifndef TUTTI_CORE_SELECT_SELECT_H
#define TUTTI_CORE_SELECT_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/tutti.h>

#include "config/config.h"

/** The message size rules see for a call: count x dtype size; SIZE_MAX
 *  for per-rank counts (known only per execution: they select as the
 *  largest size, so the bandwidth algorithms, which take any counts, are
 *  chosen). */
uint64_t tutti__select_bytes(tutti_dtype_t dtype, size_t count);

/** Mark rules whose algorithm @p has_impl does not know as skipped, with a
 *  warning "<file>:<line>: rule names implementation 'X' that no loaded
 *  module provides; rule skipped", and rules naming an implementation that
 *  does not support the rule's collective likewise.  The warning is logged
 *  at @p log_level (every task finds the same: task 0 warns, others
 *  debug). */
typedef int (*tutti__impl_lookup_fn)(void *arg, const char *name,
                                     uint32_t *collectives_out);
void tutti__select_check_rules(tutti__config_t *cfg,
                               tutti__impl_lookup_fn has_impl, void *arg,
                               int log_level);

/** Whether the implementation a matching rule names can serve @p q (the
 *  registry's knowledge, which the config lacks); 0 with the reason in
 *  @p why when it cannot. */
typedef int (*tutti__rule_accept_fn)(const void *arg, const char *algorithm,
                                     const tutti_select_query_t *q, char *why,
                                     size_t len);

/**
 * First rule (not skipped) matching @p q whose implementation @p accept
 * (if not NULL) takes, or NULL.  If @p explain is not NULL, write one line
 * per rule considered ("<file>:<line>: <algorithm>: matches" / "no: size
 * 2048 outside 0-1024" / "no: <accept's reason>" / "skipped: ...").
 */
const tutti__rule_t *tutti__select(const tutti__config_t *cfg,
                                   const tutti_select_query_t *q,
                                   tutti__rule_accept_fn accept,
                                   const void *arg, char *explain,
                                   size_t explain_len);

/** First rule (not skipped) matching @p q that names @p algorithm, or
 *  NULL: where a call that names its implementation takes its params. */
const tutti__rule_t *tutti__select_named(const tutti__config_t *cfg,
                                         const tutti_select_query_t *q,
                                         const char *algorithm);

/** "per-rank counts" or "<bytes> bytes", for messages about @p q. */
const char *tutti__select_query_size(const tutti_select_query_t *q,
                                     char *buf, size_t len);

#endif
