/*
 * Fuzz target: the control plane's frames as a task of a job of 4
 * receives them from the wire: tutti__ctrl_accept() first, then the
 * coordinator's, the members', the health and the sum handlers.  The
 * input's first byte picks the task the job plays: even, task 0 (the
 * coordinator); odd, task 1, a member whose join of group 0x2a waits for
 * the coordinator's table, which the next two bytes describe: the size
 * it joins with (1 + the byte) and its device (type: the byte modulo
 * the device types, index: the byte / 16).  A table the member takes is
 * placed as the executor places it (tutti__group_place, which must not
 * fail: the join checked the table) and the wait starts again; the
 * decisions that reach its member record must carry an error status or
 * details within bounds.  Then a sequence of frames, each a byte naming
 * the sending task, two bytes of length (little-endian), then that many
 * bytes of the frame (header and payload; the rest of the 4096 is zero).
 * A fresh job per input; the handlers' replies have no control plane to
 * go to, and say so.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "base/log.h"
#include "config/config.h"
#include "exec/exec.h"
#include "job/coordinator.h"
#include "job/ctrl.h"
#include "job/health.h"
#include "job/job.h"
#include "job/member.h"
#include "job/sum.h"
#include "plugin/registry.h"

#define TASKS 4
#define MEMBER_TASK 1
#define GROUP_KEY 0x2a

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static tutti__config_t cfg;
static tutti__registry_t reg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tutti__log_set_level(TUTTI_LOG_OFF);
    tutti__config_init(&cfg);
    return 0;
}

/* Places the table @p w took as the executor does, and checks that every
 * index in it is within what it indexes. */
static void place(tutti__job_t *job, tutti__join_wait_t *w)
{
    tutti_group_t *g = calloc(1, sizeof(*g));
    size_t n = (size_t)w->size;
    if (g == NULL)
        abort();
    g->job = job;
    g->key = w->key;
    g->size = w->size;
    g->device_type = w->device_type;
    g->device_index = w->device_index;
    g->rank_task = malloc(n * sizeof(int));
    g->pci = calloc(n, sizeof(*g->pci));
    g->pci_ids = calloc(n, sizeof(*g->pci_ids));
    if (g->rank_task == NULL || g->pci == NULL || g->pci_ids == NULL ||
        tutti__group_place(g, &w->table) != TUTTI_OK)
        abort();
    for (int r = 0; r < g->size; r++)
        if (g->rank_task[r] < 0 || g->rank_task[r] >= job->num_tasks ||
            g->localities[r].host < 0 ||
            g->localities[r].host >= g->num_hosts ||
            memchr(g->hosts[g->localities[r].host], '\0',
                   TUTTI_HOST_NAME_MAX) == NULL)
            abort();
    if (g->rank < 0 || g->rank >= g->size || g->num_tasks < 1 ||
        g->num_tasks > job->num_tasks)
        abort();
    free(g->localities);
    free(g->hosts);
    free(g->rank_task);
    free(g->pci);
    free(g->pci_ids);
    free(g);
}

/* The member's decisions: a refusal's status an error, details within
 * their bounds. */
static void take_decisions(tutti__job_t *job, tutti__job_member_t *m)
{
    tutti__decision_t *d = tutti__member_take(job, m);
    while (d != NULL) {
        tutti__decision_t *next = d->next;
        if (d->status > 0 || d->details_len > TUTTI_DETAILS_MAX ||
            d->group_details_len > TUTTI_GROUP_DETAILS_MAX)
            abort();
        free(d);
        d = next;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tutti__ctrl_msg_t msg;
    tutti__job_t job;
    tutti__join_wait_t w;
    tutti__job_member_t m;
    int member = size > 0 && (data[0] & 1);

    if (size < 1 || (member && size < 3))
        return 0;
    memset(&w, 0, sizeof(w));
    memset(&m, 0, sizeof(m));
    if (member) {
        w.key = GROUP_KEY;
        w.size = 1 + data[1];
        w.device_type = (tutti_device_type_t)(data[2] % TUTTI_DEVICE_COUNT);
        w.device_index = data[2] / 16;
        m.group_key = GROUP_KEY;
        m.device_index = w.device_index;
    }
    data += member ? 3 : 1;
    size -= member ? 3 : 1;
    if (tutti__job_init(&job, member ? MEMBER_TASK : 0, TASKS, 1, "fuzz",
                        &cfg, &reg) != TUTTI_OK ||
        tutti__coord_init(&job) != TUTTI_OK ||
        tutti__member_init(&job) != TUTTI_OK)
        abort();
    tutti__health_init(&job);
    tutti__sum_init(&job);
    if (member) {
        tutti__member_wait_add(&job, &w);
        tutti__member_add(&job, &m);
    }
    while (size >= 3) {
        int from = data[0] % TASKS;
        size_t n = (size_t)data[1] | (size_t)data[2] << 8;
        data += 3;
        size -= 3;
        if (n > size)
            n = size;
        if (n > sizeof(msg))
            n = sizeof(msg);
        memset(&msg, 0, sizeof(msg));
        memcpy(&msg, data, n);
        data += n;
        size -= n;
        char why[200];
        pthread_mutex_lock(&job.lock);
        if (tutti__ctrl_accept(&msg, from, job.task, TASKS, why, sizeof(why)))
            tutti__job_dispatch(&job, &msg);
        pthread_mutex_unlock(&job.lock);
        if (!member)
            continue;
        if (w.done && w.status == TUTTI_OK)
            place(&job, &w);
        else if (w.done && w.status >= 0)
            abort(); /* a refused table must say why it failed */
        w.done = 0;
        w.status = TUTTI_OK;
        take_decisions(&job, &m);
    }
    if (member) {
        tutti__member_remove(&job, &m);
        pthread_mutex_lock(&job.lock);
        tutti__member_wait_remove(&job, &w);
        pthread_mutex_unlock(&job.lock);
    }
    tutti__member_fini(&job);
    tutti__coord_fini(&job);
    tutti__job_fini(&job);
    return 0;
}
