/*
 * tutti-info: what this installation has and how it would choose: modules
 * found and refused (with reasons), implementations, transports, the
 * configuration in force with the source of each value, the selection rules
 * (with those skipped), and --explain for one call.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

static void usage(FILE *out)
{
    fprintf(out,
        "usage: tutti-info [--config FILE] [--modules DIRS] [--log-level L]\n"
        "       tutti-info --explain COLLECTIVE [--size BYTES] [--group-size N]\n"
        "                  [--num-tasks T] [--device cpu|cuda] [--dtype TYPE]\n"
        "Without --explain: prints the modules found (loaded, and refused with\n"
        "the reason), the implementations they provide, the transports, the\n"
        "configuration in force (each value with its source: default, file,\n"
        "env or api) and the selection rules, with those skipped and why.\n"
        "  --config FILE      read FILE instead of $TUTTI_CONFIG or the default\n"
        "  --modules DIRS     colon-separated module directories searched first\n"
        "  --log-level L      error warn info debug trace off\n"
        "  --explain COLL     show which rule picks which implementation for a\n"
        "                     call of COLL (allreduce, broadcast, ...)\n"
        "  --size BYTES       message size, K/M/G suffixes (default 1M)\n"
        "  --group-size N     members in the group (default 2)\n"
        "  --num-tasks T      processes in the group (default: group size)\n"
        "  --device TYPE      cpu (default) or cuda\n"
        "  --dtype TYPE       data type (default float32)\n"
        "  --resolve          with --explain: form a group of --group-size\n"
        "                     members in this process (one thread each), run\n"
        "                     the call once, and print each rank's place and\n"
        "                     what ran; --log-level debug also shows the\n"
        "                     resolver's log (group formed, instance decided)\n"
        "  -h, --help         this text\n"
        "Exit status: 0, or 1 if the configuration cannot be used or (with\n"
        "--explain) no implementation is chosen.\n");
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
    printf("modules:\n");
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++) {
        if (m.reason == NULL)
            printf("  loaded   %-8s %-8s %-9s %s\n", m.name, m.version,
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
        printf("\n    %s\n", im.description ? im.description : "");
    }
    printf("transports:\n"
           "  local    built in: members in one process\n");
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++) {
        if (m.transport != NULL)
            printf("  %-8s module %s %s (transport ABI %u.%u)\n",
                   m.transport, m.name, m.version, m.abi_major, m.abi_minor);
        else if (m.reason != NULL && strcmp(m.kind, "transport") == 0)
            printf("  refused  %s: %s\n", m.path, m.reason);
    }
}

typedef struct {
    tutti_context_t *ctx;
    const tutti_select_query_t *q;
    int index;
    tutti_status_t st;
    char line[256];
    char error[512];
} resolver_member_t;

/* One member: join, run the call once, describe its place and the run. */
static void *resolve_member(void *arg)
{
    resolver_member_t *m = arg;
    tutti_group_params_t gp;
    tutti_instance_params_t ip;
    tutti_request_t *r;
    tutti_group_t *g;
    tutti_locality_t loc;
    tutti_request_info_t info;
    size_t count = m->q->bytes / tutti_dtype_size(m->q->dtype);
    void *buf = calloc(count ? count : 1, tutti_dtype_size(m->q->dtype));

    tutti_group_params_init(&gp);
    gp.group_key = 0x696e666fULL; /* "info" */
    gp.group_size = m->q->group_size;
    gp.device_index = m->index;
    gp.timeout = 30;
    if (buf == NULL || (m->st = tutti_group_join(m->ctx, &gp, &g)) != TUTTI_OK)
        goto out;
    tutti_instance_params_init(&ip);
    ip.instance_key = 1;
    ip.collective = m->q->collective;
    ip.dtype = m->q->dtype;
    ip.count = count;
    if ((m->st = tutti_execute(g, &ip, buf, buf, &r)) == TUTTI_OK) {
        m->st = tutti_request_wait(r);
        tutti_request_info(r, &info);
        tutti_group_locality(g, tutti_group_rank(g), &loc);
        snprintf(m->line, sizeof(m->line), "  rank %d: task %d %s:%d, host "
                 "%s, NUMA node %d: ran %s (step %llu)", tutti_group_rank(g),
                 loc.task, tutti_device_type_name(m->q->device_type),
                 loc.device_index, tutti_group_host(g, loc.host),
                 loc.numa_node, info.algorithm,
                 (unsigned long long)info.step);
        tutti_request_free(r);
    }
    tutti_group_leave(g);
out:
    if (m->st != TUTTI_OK)
        snprintf(m->error, sizeof(m->error), "%s", tutti_last_error());
    free(buf);
    return NULL;
}

static int resolve(tutti_context_t *ctx, const tutti_select_query_t *q)
{
    int n = q->group_size, rc = 0;
    resolver_member_t *m = calloc((size_t)n, sizeof(*m));
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    if (m == NULL || t == NULL || n > 64) {
        fprintf(stderr, "tutti-info: --resolve runs groups of up to 64\n");
        free(m);
        free(t);
        return 1;
    }
    printf("resolving %s (%s, %zu bytes) in a group of %d members of this "
           "task:\n", tutti_collective_name(q->collective),
           tutti_dtype_name(q->dtype), q->bytes, n);
    for (int i = 0; i < n; i++) {
        m[i] = (resolver_member_t){ctx, q, i, TUTTI_OK, "", ""};
        pthread_create(&t[i], NULL, resolve_member, &m[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++) {
        if (m[i].st == TUTTI_OK) {
            printf("%s\n", m[i].line);
        } else {
            printf("  device %d: %s: %s\n", i, tutti_strerror(m[i].st),
                   m[i].error);
            rc = 1;
        }
    }
    free(m);
    free(t);
    return rc;
}

static int explain(const tutti_context_t *ctx, tutti_select_query_t *q)
{
    char text[8192];
    const char *impl = NULL;
    tutti_status_t st = tutti_info_explain(ctx, q, text, sizeof(text), &impl);
    printf("%s on %s, %s, %zu bytes, group of %d over %d tasks:\n",
           tutti_collective_name(q->collective),
           tutti_device_type_name(q->device_type), tutti_dtype_name(q->dtype),
           q->bytes, q->group_size, q->num_tasks);
    printf("%s", text);
    if (text[0] != '\0' && text[strlen(text) - 1] != '\n')
        printf("\n");
    if (st != TUTTI_OK) {
        printf("=> no implementation: calls like this fail\n");
        return 1;
    }
    printf("=> %s\n", impl);
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
        {"resolve", 0, 0, 'R'},
        {0, 0, 0, 0}};
    tutti_context_params_t cp;
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU,
                              TUTTI_FLOAT32, 1u << 20, 2, -1, 0};
    tutti_context_t *ctx;
    int c, li = 0, want_explain = 0, want_resolve = 0, bad = 0, rc;

    tutti_context_params_init(&cp);
    cp.task = 0;
    cp.num_tasks = 1;
    while ((c = getopt_long(argc, argv, "h", longs, &li)) != -1) {
        switch (c) {
        case 'c': cp.config_path = optarg; break;
        case 'm': cp.module_path = optarg; break;
        case 'l': cp.log_level = optarg; break;
        case 'x': want_explain = 1;
                  bad = tutti_collective_parse(optarg, &q.collective) != 0;
                  break;
        case 's': bad = parse_bytes(optarg, &q.bytes); break;
        case 'g': q.group_size = atoi(optarg); bad = q.group_size < 1; break;
        case 't': q.num_tasks = atoi(optarg); bad = q.num_tasks < 1; break;
        case 'D': bad = tutti_device_type_parse(optarg, &q.device_type) != 0;
                  break;
        case 'd': bad = tutti_dtype_parse(optarg, &q.dtype) != 0; break;
        case 'R': want_resolve = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "tutti-info: --%s '%s': invalid value; see "
                    "tutti-info --help\n", longs[li].name, optarg);
            return 2;
        }
    }
    if (q.num_tasks < 0)
        q.num_tasks = q.group_size;
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-info: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    if (want_resolve && !want_explain) {
        fprintf(stderr, "tutti-info: --resolve needs --explain COLLECTIVE\n");
        rc = 2;
    } else if (want_explain) {
        rc = explain(ctx, &q);
        if (rc == 0 && want_resolve) {
            if (q.num_tasks != 1)
                printf("(--resolve runs the group in this one task)\n");
            q.num_tasks = 1;
            rc = resolve(ctx, &q);
        }
    } else {
        print_modules(ctx);
        tutti_info_print_config(ctx, stdout);
        rc = 0;
    }
    tutti_context_destroy(ctx);
    return rc;
}
