/*
 * tutti-tune --links: measures the two link classes of the cost model
 * (tune_model.h) on the job it runs in.  Every task of the job runs it
 * (under tutti-run, mpirun, srun or the TUTTI_* variables a launcher
 * sets); the tasks join one group, and rank 0 times point-to-point
 * messages with one peer on its own host (the intra class) and one on
 * another host (the inter class): the median of 8-byte round trips, halved,
 * is the latency; the median time of a large message (acknowledged by 8
 * bytes), less that latency, gives the bandwidth.  The other tasks only
 * join and wait.  Rank 0 prints each class and the options that hand the
 * figures to tutti-tune --model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tutti/tutti.h>

#include "tune_model.h"

#define LINKS_KEY 0x74756e656c696e6bULL /* "tunelink" */
#define PINGS 200
#define WARM 20
#define SENDS 7
#define TAG_PING 1u
#define TAG_PONG 2u
#define TAG_DATA 3u

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Rank 0 and @p peer time one link: latency (us) and bandwidth (GB/s)
 * into @p out on rank 0. */
static tutti_status_t time_link(tutti_group_t *g, int peer, char *buf,
                                size_t bytes, tune_link_t *out)
{
    double rt[PINGS], one[SENDS];
    int me = tutti_group_rank(g), lead = me == 0;
    tutti_status_t st = TUTTI_OK;
    char ping[8] = {0};

    for (int i = 0; i < WARM + PINGS && st == TUTTI_OK; i++) {
        double t0 = now_us();
        if (lead) {
            st = tutti_send(g, ping, 8, TUTTI_UINT8, peer, TAG_PING);
            if (st == TUTTI_OK)
                st = tutti_recv(g, ping, 8, TUTTI_UINT8, peer, TAG_PONG);
        } else {
            st = tutti_recv(g, ping, 8, TUTTI_UINT8, 0, TAG_PING);
            if (st == TUTTI_OK)
                st = tutti_send(g, ping, 8, TUTTI_UINT8, 0, TAG_PONG);
        }
        if (i >= WARM)
            rt[i - WARM] = now_us() - t0;
    }
    for (int i = 0; i < SENDS + 1 && st == TUTTI_OK; i++) {
        double t0 = now_us();
        if (lead) {
            st = tutti_send(g, buf, bytes, TUTTI_UINT8, peer, TAG_DATA);
            if (st == TUTTI_OK)
                st = tutti_recv(g, ping, 8, TUTTI_UINT8, peer, TAG_PONG);
        } else {
            st = tutti_recv(g, buf, bytes, TUTTI_UINT8, 0, TAG_DATA);
            if (st == TUTTI_OK)
                st = tutti_send(g, ping, 8, TUTTI_UINT8, 0, TAG_PONG);
        }
        if (i > 0)
            one[i - 1] = now_us() - t0;
    }
    if (st != TUTTI_OK || !lead)
        return st;
    out->alpha_us = median(rt, PINGS) / 2;
    double t = median(one, SENDS) - out->alpha_us;
    out->beta_gbps = t > 0 ? (double)bytes / t / 1e3 : 0;
    return TUTTI_OK;
}

/* Rank 0's peers: the lowest other rank on its host, the lowest on
 * another host (-1: none). */
static tutti_status_t peers(tutti_group_t *g, int *intra, int *inter)
{
    tutti_locality_t l0, l;
    tutti_status_t st = tutti_group_locality(g, 0, &l0);
    *intra = *inter = -1;
    for (int r = 1; st == TUTTI_OK && r < tutti_group_size(g); r++) {
        if ((st = tutti_group_locality(g, r, &l)) != TUTTI_OK)
            break;
        if (l.host == l0.host && *intra < 0)
            *intra = r;
        if (l.host != l0.host && *inter < 0)
            *inter = r;
    }
    return st;
}

static void say(tutti_group_t *g, const char *cls, int peer,
                const tune_link_t *k)
{
    tutti_locality_t l0, l;
    if (tutti_group_locality(g, 0, &l0) != TUTTI_OK ||
        tutti_group_locality(g, peer, &l) != TUTTI_OK)
        return;
    printf("links: %s: rank 0 (%s) <-> rank %d (%s): latency %.2f us, "
           "bandwidth %.3f GB/s\n", cls, tutti_group_host(g, l0.host), peer,
           tutti_group_host(g, l.host), k->alpha_us, k->beta_gbps);
}

int tune_links_main(size_t bytes)
{
    tutti_context_t *ctx;
    tutti_group_t *g;
    tutti_group_params_t gp;
    tune_link_t cls[2] = {{TUNE_MODEL_INTRA_US, TUNE_MODEL_INTRA_GBPS},
                          {TUNE_MODEL_INTER_US, TUNE_MODEL_INTER_GBPS}};
    int peer[2];
    char *buf = malloc(bytes);
    tutti_status_t st = buf ? tutti_context_create(NULL, &ctx)
                            : TUTTI_ERR_NO_MEMORY;

    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-tune: --links: %s: %s\n", tutti_strerror(st),
                buf ? tutti_last_error() : "no memory for the message");
        free(buf);
        return 1;
    }
    memset(buf, 0x5a, bytes);
    tutti_group_params_init(&gp);
    gp.group_key = LINKS_KEY;
    gp.group_size = tutti_context_num_tasks(ctx);
    st = tutti_group_join(ctx, &gp, &g);
    if (st == TUTTI_OK)
        st = peers(g, &peer[0], &peer[1]);
    int me = st == TUTTI_OK ? tutti_group_rank(g) : -1;
    for (int c = 0; c < 2 && st == TUTTI_OK; c++)
        if (peer[c] > 0 && (me == 0 || me == peer[c]))
            st = time_link(g, peer[c], buf, bytes, &cls[c]);
    if (st == TUTTI_OK)
        st = tutti_barrier(g);
    if (st == TUTTI_OK && me == 0) {
        static const char *const name[2] = {"intra", "inter"};
        for (int c = 0; c < 2; c++) {
            if (peer[c] > 0)
                say(g, name[c], peer[c], &cls[c]);
            else
                printf("links: %s: no such peer of rank 0 (%s); the "
                       "model's default stands\n", name[c],
                       c == 0 ? "no other task on its host"
                              : "every task on its host");
        }
        printf("links: tutti-tune --model --intra %.2f,%.3f --inter "
               "%.2f,%.3f\n", cls[0].alpha_us, cls[0].beta_gbps, cls[1].alpha_us,
               cls[1].beta_gbps);
    }
    if (st != TUTTI_OK)
        fprintf(stderr, "tutti-tune: --links: task %d: %s: %s\n",
                tutti_context_task(ctx), tutti_strerror(st),
                tutti_last_error());
    if (me >= 0)
        tutti_group_leave(g);
    tutti_context_destroy(ctx);
    free(buf);
    return st == TUTTI_OK ? 0 : 1;
}
