/*
 * One task of the job-secret test (test_tcp_guard.c), started by
 * tutti-run with TUTTI_TRANSPORTS=tcp:
 *
 *   secret_worker
 *
 * Notes TUTTI_JOB_SECRET as the task starts, creates its context (the
 * control plane connects over tcp and reads the secret), then looks for
 * the secret: the variable must be gone from its environment and the
 * value from /proc/self/environ (what a child, ps or a core dump would
 * see).  Then joins a group of every task, a second tcp endpoint that
 * needs the secret again, and runs an int32 allreduce.  Prints one line:
 *   "secret_worker: task T: environment clean, sum exact"
 * or "secret_worker: task T: ..." saying what it found; exit 0, or 1.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tutti/tutti.h>

#include "members.h"

/* Whether /proc/self/environ holds @p value; -1 if it cannot be read. */
static int environ_has(const char *value)
{
    static char buf[1 << 16];
    size_t n = 0, vl = strlen(value);
    ssize_t got;
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (n < sizeof(buf) &&
           (got = read(fd, buf + n, sizeof(buf) - n)) > 0)
        n += (size_t)got;
    close(fd);
    for (size_t i = 0; i + vl <= n; i++)
        if (memcmp(buf + i, value, vl) == 0)
            return 1;
    return 0;
}

int main(void)
{
    const char *sec = getenv("TUTTI_JOB_SECRET");
    char secret[256];
    int32_t in[64], out[64];
    tutti_instance_params_t p;
    tutti_group_t *g = NULL;
    tutti_status_t st;

    if (sec == NULL || strlen(sec) >= sizeof(secret)) {
        printf("secret_worker: no TUTTI_JOB_SECRET to start with\n");
        return 1;
    }
    snprintf(secret, sizeof(secret), "%s", sec);
    if (environ_has(secret) != 1) {
        printf("secret_worker: the secret is not in /proc/self/environ at "
               "the start; the check below would prove nothing\n");
        return 1;
    }
    tutti_context_t *ctx = test_context_from_env("secret_worker",
                                                 tutti_status_name);
    if (ctx == NULL)
        return 1;
    int task = tutti_context_task(ctx), n = tutti_context_num_tasks(ctx);
    if (getenv("TUTTI_JOB_SECRET") != NULL) {
        printf("secret_worker: task %d: TUTTI_JOB_SECRET is still set after "
               "the context was created\n", task);
        return 1;
    }
    if (environ_has(secret) != 0) {
        printf("secret_worker: task %d: the secret is still in "
               "/proc/self/environ after the context was created\n", task);
        return 1;
    }
    if ((st = test_join(ctx, 7, n, 0, 0, &g)) != TUTTI_OK) {
        printf("secret_worker: task %d: join: %s: %s\n", task,
               tutti_status_name(st), tutti_last_error());
        return 1;
    }
    for (int j = 0; j < 64; j++)
        in[j] = task * 1000 + j;
    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 64);
    if ((st = test_exec_wait(g, &p, in, out)) != TUTTI_OK) {
        printf("secret_worker: task %d: allreduce: %s: %s\n", task,
               tutti_status_name(st), tutti_last_error());
        return 1;
    }
    for (int j = 0; j < 64; j++) {
        int32_t want = 1000 * n * (n - 1) / 2 + n * j;
        if (out[j] != want) {
            printf("secret_worker: task %d: element %d is %d, expected %d\n",
                   task, j, out[j], want);
            return 1;
        }
    }
    printf("secret_worker: task %d: environment clean, sum exact\n", task);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return 0;
}
