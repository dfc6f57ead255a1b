/*
 * tutti-info: what this installation has and how it would choose: modules
 * found and refused (with reasons), implementations, transports, the
 * configuration in force with the source of each value, the selection rules
 * (with those skipped), CUDA's runtime, driver and devices, --explain
 * for one call, and --lint of a file's selection rules.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "cuda_tools.h"
#include "info_hosts.h"
#include "info_resolve.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: tutti-info [--config FILE] [--modules DIRS] [--log-level L]\n"
        "                  [--settings]\n"
        "       tutti-info --explain COLLECTIVE [--size BYTES] [--group-size N]\n"
        "                  [--num-tasks T] [--hosts H] [--device cpu|cuda]\n"
        "                  [--dtype TYPE] [--per-rank] [--resolve]\n"
        "       tutti-info --lint FILE [--modules DIRS] [--log-level L]\n"
        "Without --explain or --lint: prints the modules found (loaded, and\n"
        "refused with the reason), the implementations they provide, the\n"
        "transports, CUDA (runtime, driver and devices; no device, with the\n"
        "runtime's error; or not built), the configuration in force (each\n"
        "value with its source: default, file, env or api) and the selection\n"
        "rules, with those skipped and why.\n"
        "  --settings         instead, every setting (the core's and the\n"
        "                     loaded modules'): its doc, default, environment\n"
        "                     variable and what it accepts\n"
        "  --config FILE      read FILE instead of $TUTTI_CONFIG or the default\n"
        "  --modules DIRS     colon-separated module directories searched first\n"
        "  --log-level L      error warn info debug trace off\n"
        "  --explain COLL     show which rule picks which implementation for a\n"
        "                     call of COLL: allreduce broadcast reduce allgather\n"
        "                     gather reduce_scatter alltoall permute\n"
        "  --size BYTES       message size, K/M/G suffixes (default 1M): count x\n"
        "                     type size, count per rank as the collective has\n"
        "                     it (allgather: one rank's part; alltoall: one\n"
        "                     block)\n"
        "  --group-size N     members in the group (default 2)\n"
        "  --num-tasks T      processes in the group, 1 to N (default N)\n"
        "  --hosts H          hosts the group spans, 1 to T (default 1), as\n"
        "                     the rules' hosts: key reads it; --resolve\n"
        "                     takes 1 only (its tasks run on this host)\n"
        "  --device TYPE      cpu (default) or cuda (the CUDA rules: those\n"
        "                     whose implementation is not loaded are skipped)\n"
        "  --dtype TYPE       data type (default float32)\n"
        "  --per-rank         a call with per-rank counts (allgather,\n"
        "                     reduce_scatter, alltoall; --size is not used):\n"
        "                     rules match as at the largest size and skip\n"
        "                     implementations that take equal counts only\n"
        "  --resolve          with --explain: run the call for real.  T\n"
        "                     processes of this host (a job of their own) each\n"
        "                     drive their share of the N members as threads\n"
        "                     (N/T each, the first tasks one more where it does\n"
        "                     not divide).  Every member runs the call out of\n"
        "                     place, then in place, and for allgather,\n"
        "                     reduce_scatter and alltoall once more with\n"
        "                     count TUTTI_COUNT_PER_RANK and uneven counts\n"
        "                     (some zero); every output element is checked\n"
        "                     against the exact result (op sum, root 0,\n"
        "                     permute to rank+1 mod N).  Prints per call each\n"
        "                     rank's task, device, host, NUMA node, the\n"
        "                     implementation that ran, its step, and the\n"
        "                     elements checked and wrong.  A --size that is not\n"
        "                     a whole number of elements is rounded down, with\n"
        "                     a note.  --log-level debug also shows the\n"
        "                     resolver's log (group formed, instance decided)\n"
        "  --lint FILE        check the selection rules of FILE against the\n"
        "                     modules loaded: implementations not loaded or\n"
        "                     that do not run the rule's collective or device,\n"
        "                     rules that never match (earlier rules take their\n"
        "                     calls), overlapping size ranges, and calls no\n"
        "                     rule matches (gaps).  One line per finding,\n"
        "                     FILE:LINE:COLUMN: what, then a summary line;\n"
        "                     lines 'note:' and 'warning:' (parameters for an\n"
        "                     implementation that declares none: not\n"
        "                     checked) are not findings\n"
        "  -h, --help         this text\n"
        "Exit status: 0; 1 if the configuration cannot be used, (with\n"
        "--explain) no implementation is chosen, or (with --resolve) a call\n"
        "failed or an element was wrong; 2 on bad options, or values that do\n"
        "not fit (more tasks than members, a --size under one element).\n"
        "With --lint: 0 no findings; 1 findings; 2 FILE cannot be linted (it\n"
        "cannot be read, does not parse or breaks the schema: the error names\n"
        "FILE:LINE:COLUMN) or bad options.\n");
}

static int parse_bytes(const char *s, size_t *out)
{
    uint64_t v;
    if (tutti_size_parse(s, &v) != TUTTI_OK || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static void print_mask(const char *label, uint32_t mask, int count,
                       const char *(*name)(int))
{
    const char *sep = "";
    printf("%s", label);
    for (int i = 0; i < count; i++) {
        if (mask & (1u << i)) {
            printf("%s%s", sep, name(i));
            sep = ",";
        }
    }
}

static const char *coll_name(int i)
{
    return tutti_collective_name((tutti_collective_t)i);
}

static const char *device_name(int i)
{
    return tutti_device_type_name((tutti_device_type_t)i);
}

static void print_modules(const tutti_context_t *ctx)
{
    tutti_module_info_t m;
    tutti_impl_info_t im;
    int vw = 8;
    char cuda[512];

    /* A version is printed whole ("0.1.0 (NCCL 2.28.9)"); the column
     * widens to the longest so that the kinds stay aligned. */
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++)
        if (m.reason == NULL && (int)strlen(m.version) > vw)
            vw = (int)strlen(m.version);
    printf("modules:\n");
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++) {
        if (m.reason == NULL)
            printf("  loaded   %-8s %-*s %-9s %s\n", m.name, vw, m.version,
                   m.kind, m.path);
        else
            printf("  refused  %s: %s\n", m.path, m.reason);
    }
    printf("implementations:\n");
    for (size_t i = 0; tutti_info_impl(ctx, i, &im) == TUTTI_OK; i++) {
        printf("  %-26s module %-6s", im.name, im.module);
        print_mask(" collectives ", im.collectives, TUTTI_COLL_COUNT,
                   coll_name);
        print_mask(" devices ", im.device_types, TUTTI_DEVICE_COUNT,
                   device_name);
        if (im.per_rank_collectives)
            print_mask(" per-rank counts ", im.per_rank_collectives,
                       TUTTI_COLL_COUNT, coll_name);
        for (size_t k = 0; im.aliases != NULL && im.aliases[k] != NULL; k++)
            printf("%s%s", k ? ", " : " formerly ", im.aliases[k]);
        printf("\n    %s\n", im.description ? im.description : "");
    }
    printf("transports:\n"
           "  local    built in: members in one process\n");
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++) {
        if (m.transport != NULL) {
            char said[2048];
            printf("  %-8s module %s %s (transport ABI %u.%u)\n",
                   m.transport, m.name, m.version, m.abi_major, m.abi_minor);
            if (tutti_info_transport(ctx, m.transport, said, sizeof(said)) ==
                TUTTI_OK)
                for (char *l = strtok(said, "\n"); l; l = strtok(NULL, "\n"))
                    printf("           %s\n", l);
        } else if (m.reason != NULL && strcmp(m.kind, "transport") == 0)
            printf("  refused  %s: %s\n", m.path, m.reason);
    }
    tool_cuda_describe(cuda, sizeof(cuda));
    printf("cuda: %s\n", cuda);
}

static int explain(const tutti_context_t *ctx, tutti_select_query_t *q)
{
    char text[8192];
    const char *impl = NULL;
    tutti_status_t st = tutti_info_explain(ctx, q, text, sizeof(text), &impl);
    char size[32];
    if (q->per_rank)
        snprintf(size, sizeof(size), "per-rank counts");
    else
        snprintf(size, sizeof(size), "%zu bytes", q->bytes);
    printf("%s on %s, %s, %s, group of %d over %d tasks",
           tutti_collective_name(q->collective),
           tutti_device_type_name(q->device_type), tutti_dtype_name(q->dtype),
           size, q->group_size, q->num_tasks);
    if (q->num_hosts > 1)
        printf(" on %d hosts", q->num_hosts);
    printf(":\n");
    printf("%s", text);
    if (text[0] != '\0' && text[strlen(text) - 1] != '\n')
        printf("\n");
    if (st != TUTTI_OK) {
        printf("=> no implementation: calls like this fail\n");
        return 1;
    }
    printf("=> %s\n", impl);
    info_hosts_print(stdout, impl, q->group_size, q->num_hosts);
    return 0;
}

/* --lint: one line per finding, then a summary; 0 none, 1 some, 2 when the
 * lint itself failed. */
static int lint(const tutti_context_t *ctx, const char *file)
{
    size_t findings = 0;
    tutti_status_t st = tutti_info_lint(ctx, stdout, &findings);
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-info: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 2;
    }
    if (findings == 0)
        printf("%s: no findings\n", file);
    else
        printf("%s: %zu finding%s\n", file, findings,
               findings == 1 ? "" : "s");
    return findings == 0 ? 0 : 1;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 1 << 20)
        return -1;
    *out = (int)v;
    return 0;
}

/* --resolve runs whole elements: rounds q->bytes down to them, with a note;
 * -1 (after saying why) if not even one fits. */
static int whole_elements(tutti_select_query_t *q)
{
    size_t es = tutti_dtype_size(q->dtype), rest = q->bytes % es;
    if (rest == 0)
        return 0;
    if (q->bytes < es) {
        fprintf(stderr, "tutti-info: --size %zu is less than one %s element "
                "(%zu bytes): expected 0 or at least %zu\n", q->bytes,
                tutti_dtype_name(q->dtype), es, es);
        return -1;
    }
    printf("note: --size %zu is not a whole number of %s elements (%zu "
           "bytes each): resolving %zu elements, %zu bytes\n", q->bytes,
           tutti_dtype_name(q->dtype), es, q->bytes / es, q->bytes - rest);
    q->bytes -= rest;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"config", 1, 0, 'c'},     {"modules", 1, 0, 'm'},
        {"log-level", 1, 0, 'l'},  {"explain", 1, 0, 'x'},
        {"size", 1, 0, 's'},       {"group-size", 1, 0, 'g'},
        {"num-tasks", 1, 0, 't'},  {"device", 1, 0, 'D'},
        {"dtype", 1, 0, 'd'},      {"help", 0, 0, 'h'},
        {"resolve", 0, 0, 'R'},    {"per-rank", 0, 0, 'P'},
        {"settings", 0, 0, 'S'},   {"lint", 1, 0, 'L'},
        {"hosts", 1, 0, 'H'},      {0, 0, 0, 0}};
    tutti_context_params_t cp;
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU,
                              TUTTI_FLOAT32, 1u << 20, 2, -1, 0, 1};
    tutti_context_t *ctx;
    int c, li = 0, want_explain = 0, want_resolve = 0, bad = 0, rc;
    int want_settings = 0;
    const char *lint_file = NULL;

    tutti_context_params_init(&cp);
    while ((c = getopt_long(argc, argv, "h", longs, &li)) != -1) {
        switch (c) {
        case 'c': cp.config_path = optarg; break;
        case 'm': cp.module_path = optarg; break;
        case 'l': cp.log_level = optarg; break;
        case 'x': want_explain = 1;
                  bad = tutti_collective_parse(optarg, &q.collective) != 0;
                  break;
        case 's': bad = parse_bytes(optarg, &q.bytes); break;
        case 'g': bad = parse_int(optarg, &q.group_size); break;
        case 't': bad = parse_int(optarg, &q.num_tasks); break;
        case 'H': bad = parse_int(optarg, &q.num_hosts); break;
        case 'D': bad = tutti_device_type_parse(optarg, &q.device_type) != 0;
                  break;
        case 'd': bad = tutti_dtype_parse(optarg, &q.dtype) != 0; break;
        case 'R': want_resolve = 1; break;
        case 'P': q.per_rank = 1; break;
        case 'S': want_settings = 1; break;
        case 'L': lint_file = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "tutti-info: --%s '%s': invalid value; see "
                    "tutti-info --help\n", longs[li].name, optarg);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tutti-info: unexpected argument '%s'; see "
                "tutti-info --help\n", argv[optind]);
        return 2;
    }
    if (want_settings && want_explain) {
        fprintf(stderr, "tutti-info: --settings and --explain go apart\n");
        return 2;
    }
    if (lint_file != NULL &&
        (want_explain || want_settings || cp.config_path != NULL)) {
        fprintf(stderr, "tutti-info: --lint goes apart from --explain, "
                "--settings and --config (its FILE is the configuration)\n");
        return 2;
    }
    if (want_resolve && !want_explain) {
        fprintf(stderr, "tutti-info: --resolve needs --explain COLLECTIVE\n");
        return 2;
    }
    if (q.per_rank && (want_resolve || !want_explain)) {
        fprintf(stderr, "tutti-info: --per-rank goes with --explain alone "
                "(--resolve runs a per-rank call of its own)\n");
        return 2;
    }
    if (q.num_tasks < 0)
        q.num_tasks = q.group_size;
    if (q.num_tasks > q.group_size) {
        fprintf(stderr, "tutti-info: --num-tasks %d does not fit --group-size "
                "%d: each task holds at least one member (expected 1 to %d "
                "tasks)\n", q.num_tasks, q.group_size, q.group_size);
        return 2;
    }
    if (q.num_hosts > q.num_tasks) {
        fprintf(stderr, "tutti-info: --hosts %d does not fit --num-tasks %d: "
                "each task runs on one host (expected 1 to %d hosts)\n",
                q.num_hosts, q.num_tasks, q.num_tasks);
        return 2;
    }
    info_resolve_t r = {&cp, q.collective, q.dtype, 0, q.group_size,
                        q.num_tasks, 30.0};
    if (want_resolve) {
        if (q.num_hosts != 1) {
            fprintf(stderr, "tutti-info: --resolve with --hosts %d: expected "
                    "1 (--resolve runs its tasks on this host)\n",
                    q.num_hosts);
            return 2;
        }
        if (q.device_type != TUTTI_DEVICE_CPU) {
            fprintf(stderr, "tutti-info: --resolve with --device %s: expected "
                    "cpu (--resolve runs on host memory)\n",
                    tutti_device_type_name(q.device_type));
            return 2;
        }
        if (whole_elements(&q) != 0)
            return 2;
        r.count = q.bytes / tutti_dtype_size(q.dtype);
        if (info_resolve_check(&r) != 0)
            return 2;
    }
    /* This process's own context (one task) serves the listing and the
     * explanation; --resolve's tasks create theirs after it is gone. */
    cp.task = 0;
    cp.num_tasks = 1;
    if (lint_file != NULL)
        cp.config_path = lint_file;
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-info: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return lint_file != NULL ? 2 : 1;
    }
    if (lint_file != NULL) {
        rc = lint(ctx, lint_file);
    } else if (want_explain) {
        rc = explain(ctx, &q);
    } else if (want_settings) {
        tutti_info_print_settings(ctx, stdout);
        rc = 0;
    } else {
        print_modules(ctx);
        tutti_info_print_config(ctx, stdout);
        rc = 0;
    }
    tutti_context_destroy(ctx);
    if (rc == 0 && want_resolve)
        rc = info_resolve(&r);
    return rc;
}
