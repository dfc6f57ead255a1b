/*
 * Selection: the rules of the configuration, checked against what the
 * loaded modules provide, and the first rule that matches a call (select.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/sbuf.h"
#include "base/size.h"
#include "select/select.h"

static bool mask_has(uint32_t mask, int value)
{
    if (mask == 0)
        return true;
    return value >= 0 && value < 32 && (mask & (1u << value)) != 0;
}

static void skip_rule(tutti__rule_t *r, const char *reason, int log_level)
{
    char where[300];

    tutti__config_rule_where(r, where, sizeof(where));
    r->skipped = 1;
    free(r->skip_reason);
    r->skip_reason = strdup(reason);
    tutti__log(log_level, "config", "%s: %s; rule skipped", where, reason);
}

static void check_rule(tutti__rule_t *r, tutti__impl_lookup_fn has_impl,
                       void *arg, int log_level)
{
    uint32_t colls = 0, missing;
    char names[200], reason[400];

    r->skipped = 0;
    free(r->skip_reason);
    r->skip_reason = NULL;
    if (!has_impl(arg, tutti__config_rule_algo(r), &colls)) {
        snprintf(reason, sizeof(reason),
                 "rule names implementation '%s' that no loaded module "
                 "provides",
                 tutti__config_rule_algo(r));
        /* A rule for accelerators only names an optional module (nccl,
         * built where its library is found): its absence is news to
         * nobody running on cpus. */
        int accel_only = r->device_types != 0 &&
                         !mask_has(r->device_types, TUTTI_DEVICE_CPU);
        skip_rule(r, reason,
                  accel_only && log_level < TUTTI_LOG_INFO ? TUTTI_LOG_INFO
                                                           : log_level);
        return;
    }
    missing = r->collectives & ~colls;
    if (missing != 0) {
        tutti__cfg_mask_names(&tutti__cfg_coll_kind, missing, ",", names,
                              sizeof(names));
        snprintf(reason, sizeof(reason),
                 "implementation '%s' does not support %s",
                 tutti__config_rule_algo(r), names);
        skip_rule(r, reason, log_level);
    }
}

void tutti__select_check_rules(tutti__config_t *cfg,
                               tutti__impl_lookup_fn has_impl, void *arg,
                               int log_level)
{
    if (cfg == NULL || has_impl == NULL)
        return;
    for (size_t i = 0; i < cfg->num_rules; i++)
        check_rule(&cfg->rules[i], has_impl, arg, log_level);
}

static bool mask_mismatch(const tutti__cfg_name_kind_t *kind, uint32_t mask,
                          int value, char *why, size_t len)
{
    char names[200];
    const char *name =
        value >= 0 && value < kind->count ? kind->name(value) : "(invalid)";

    if (mask_has(mask, value))
        return false;
    tutti__cfg_mask_names(kind, mask, ",", names, sizeof(names));
    snprintf(why, len, "%s %s not in %s", kind->key, name, names);
    return true;
}

static bool int_mismatch(const char *key, int v, int lo, int hi, char *why,
                         size_t len)
{
    char range[64];

    if (v >= lo && v <= hi)
        return false;
    tutti__range_format((uint64_t)lo, (uint64_t)hi, INT32_MAX, false, range,
                 sizeof(range));
    snprintf(why, len, "%s %d outside %s", key, v, range);
    return true;
}

/* Why @p r does not match @p q, or false when it does. */
static bool rule_mismatch(const tutti__rule_t *r,
                          const tutti_select_query_t *q, char *why, size_t len)
{
    char range[64];

    if (mask_mismatch(&tutti__cfg_coll_kind, r->collectives, (int)q->collective,
                      why, len) ||
        mask_mismatch(&tutti__cfg_device_kind, r->device_types,
                      (int)q->device_type, why, len) ||
        mask_mismatch(&tutti__cfg_dtype_kind, r->dtypes, (int)q->dtype, why,
                      len))
        return true;
    /* Per-rank counts are known only per execution: they match as the
     * largest size, so the bandwidth algorithms, which take any counts,
     * are chosen. */
    uint64_t bytes = q->per_rank ? UINT64_MAX : (uint64_t)q->bytes;
    if (bytes < r->size_min || bytes > r->size_max) {
        tutti__range_format(r->size_min, r->size_max, UINT64_MAX, false, range,
                     sizeof(range));
        if (q->per_rank)
            snprintf(why, len, "per-rank counts match as the largest size, "
                     "outside %s", range);
        else
            snprintf(why, len, "size %zu outside %s", q->bytes, range);
        return true;
    }
    return int_mismatch("group_size", q->group_size, r->group_min,
                        r->group_max, why, len) ||
           int_mismatch("num_tasks", q->num_tasks, r->tasks_min, r->tasks_max,
                        why, len) ||
           int_mismatch("hosts", q->num_hosts > 0 ? q->num_hosts : 1,
                        r->hosts_min, r->hosts_max, why, len);
}

const tutti__rule_t *tutti__select_named(const tutti__config_t *cfg,
                                         const tutti_select_query_t *q,
                                         const char *algorithm)
{
    char why[400];
    if (cfg == NULL || q == NULL || algorithm == NULL)
        return NULL;
    for (size_t i = 0; i < cfg->num_rules; i++) {
        const tutti__rule_t *r = &cfg->rules[i];
        if (!r->skipped && r->algorithm != NULL &&
            strcmp(r->algorithm, algorithm) == 0 &&
            !rule_mismatch(r, q, why, sizeof(why)))
            return r;
    }
    return NULL;
}

const char *tutti__select_query_size(const tutti_select_query_t *q,
                                     char *buf, size_t len)
{
    if (q->per_rank)
        snprintf(buf, len, "per-rank counts");
    else
        snprintf(buf, len, "%zu bytes", q->bytes);
    return buf;
}

const tutti__rule_t *tutti__select(const tutti__config_t *cfg,
                                   const tutti_select_query_t *q,
                                   tutti__rule_accept_fn accept,
                                   const void *arg, char *explain,
                                   size_t explain_len)
{
    tutti__sbuf_t sb = {explain_len > 0 ? explain : NULL, explain_len, 0};
    char where[300], why[400];

    if (sb.buf != NULL)
        explain[0] = '\0';
    if (cfg == NULL || q == NULL)
        return NULL;
    for (size_t i = 0; i < cfg->num_rules; i++) {
        const tutti__rule_t *r = &cfg->rules[i];
        tutti__config_rule_where(r, where, sizeof(where));
        if (r->skipped) {
            tutti__sbuf_printf(&sb, "%s: %s: skipped (%s)\n", where,
                                 tutti__config_rule_algo(r),
                                 r->skip_reason != NULL ? r->skip_reason : "");
        } else if (rule_mismatch(r, q, why, sizeof(why)) ||
                   (accept != NULL && r->algorithm != NULL &&
                    !accept(arg, r->algorithm, q, why, sizeof(why)))) {
            tutti__sbuf_printf(&sb, "%s: %s: no (%s)\n", where,
                               tutti__config_rule_algo(r), why);
        } else {
            tutti__sbuf_printf(&sb, "%s: %s: matches\nchosen: %s (%s)\n", where,
                               tutti__config_rule_algo(r),
                               tutti__config_rule_algo(r), where);
            return r;
        }
    }
    tutti__sbuf_printf(&sb, "chosen: none (no rule matches)\n");
    return NULL;
}

uint64_t tutti__select_bytes(tutti_dtype_t dtype, size_t count)
{
    if (count == TUTTI_COUNT_PER_RANK)
        return SIZE_MAX;
    return (uint64_t)count * tutti_dtype_size(dtype);
}
