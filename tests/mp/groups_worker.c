/*
 * One task of the progress-engine test (test_tcp.c), started by tutti-run:
 *
 *   groups_worker K
 *
 * Counts this process's threads once its context is up (the control
 * plane connected), joins K groups of every task one after the other,
 * runs an int32 allreduce in each with all K joined, counts the threads
 * again and leaves them.  Prints per rank:
 *   "groups_worker: rank R: threads B before, A with K groups, exact"
 * or "groups_worker: rank R: failed: ..." / "... wrong: ...".
 * Exit 0 when every sum is exact, 2 on a wrong value, 3 on a failure.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tutti/tutti.h>

#include "members.h"

#define MAX_GROUPS 16

/* Threads of this process, as /proc lists them; -1 if it cannot. */
static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int k = argc == 2 ? atoi(argv[1]) : 0;
    if (k < 1 || k > MAX_GROUPS) {
        fprintf(stderr, "usage: groups_worker K (1 to %d)\n", MAX_GROUPS);
        return 1;
    }
    tutti_context_t *ctx = test_context_from_env("groups_worker",
                                                 tutti_status_name);
    if (ctx == NULL)
        return 1;
    int task = tutti_context_task(ctx), n = tutti_context_num_tasks(ctx);
    int before = threads(), rc = 0;
    tutti_group_t *g[MAX_GROUPS] = {0};
    for (int i = 0; i < k && rc == 0; i++) {
        if (test_join(ctx, 100 + (uint64_t)i, n, 0, 0, &g[i]) != TUTTI_OK) {
            printf("groups_worker: rank %d: failed: join %d: %s\n", task, i,
                   tutti_last_error());
            rc = 3;
        }
    }
    int with = threads();
    for (int i = 0; i < k && rc == 0; i++) {
        int32_t in[64], out[64];
        tutti_instance_params_t p;
        for (int j = 0; j < 64; j++)
            in[j] = task * 100 + i + j;
        test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 64);
        tutti_status_t st = test_exec_wait(g[i], &p, in, out);
        if (st != TUTTI_OK) {
            printf("groups_worker: rank %d: failed: group %d: %s: %s\n", task,
                   i, tutti_status_name(st), tutti_last_error());
            rc = 3;
            break;
        }
        for (int j = 0; j < 64 && rc == 0; j++) {
            int32_t want = 100 * n * (n - 1) / 2 + n * (i + j);
            if (out[j] != want) {
                printf("groups_worker: rank %d: wrong: group %d element %d "
                       "is %d, expected %d\n", task, i, j, out[j], want);
                rc = 2;
            }
        }
    }
    if (rc == 0)
        printf("groups_worker: rank %d: threads %d before, %d with %d "
               "groups, exact\n", task, before, with, k);
    fflush(stdout);
    if (rc != 0)
        return rc;
    for (int i = k - 1; i >= 0; i--)
        tutti_group_leave(g[i]);
    tutti_context_destroy(ctx);
    return 0;
}
