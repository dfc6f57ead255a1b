/*
 * The control plane's frames from a task that authenticated but does not
 * play by the rules (core/job): tutti__ctrl_accept() takes each frame
 * type only from the task allowed to send it and only at the task meant
 * to take it; a member refuses a group table that does not fit the join
 * it made (sizes, indices, names, its own place), and a decision whose
 * lengths or status are out of range; the coordinator refuses a join or
 * an instance proposal with a field out of its range, naming the field
 * and its value, and bounds what it keeps; a sum round counts each task
 * once.  Each test builds a job without a network: a control plane of
 * one task, so what task 0 sends to itself is handled in place, and
 * frames from other tasks handed to tutti__job_dispatch() as the control
 * thread hands them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "base/log.h"
#include "config/config.h"
#include "job/coord_decide.h"
#include "job/coordinator.h"
#include "job/ctrl.h"
#include "job/health.h"
#include "job/job.h"
#include "job/member.h"
#include "job/sum.h"
#include "job/wire.h"
#include "plugin/registry.h"
#include "test_util.h"

#define TASKS 4
#define KEY 0x2a

typedef struct {
    tutti__config_t cfg;
    tutti__registry_t reg;
    tutti__job_t job;
    test_tmp_t tmp;          /* the log of the test */
    char log[300];
} fixture_t;

/* Task @p task of a job of TASKS tasks, every part's handlers registered,
 * its log in a file of the test's own. */
static fixture_t *fixture(int task)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    tutti__config_init(&f->cfg);
    assert_int_equal(tutti__job_init(&f->job, task, TASKS, 1, "test",
                                     &f->cfg, &f->reg), TUTTI_OK);
    assert_int_equal(tutti__coord_init(&f->job), TUTTI_OK);
    assert_int_equal(tutti__member_init(&f->job), TUTTI_OK);
    tutti__health_init(&f->job);
    tutti__sum_init(&f->job);
    /* Task 0's control plane of one task: its frames to itself are
     * handled in place, as in any job; it sends to no other. */
    if (task == 0) {
        tutti__ctrl_params_t p = {
            .task = 0, .num_tasks = 1, .local_num_tasks = 1,
            .job_id = "test", .timeout = 1.0, .config = &f->cfg,
            .transports = &f->job.transports, .lock = &f->job.lock,
            .handle = tutti__job_dispatch, .arg = &f->job};
        assert_int_equal(tutti__ctrl_start(&p, &f->job.ctrl), TUTTI_OK);
    }
    test_tmp_make(&f->tmp, "ctrl", "x", NULL);
    snprintf(f->log, sizeof(f->log), "%s/log", f->tmp.dir);
    tutti__log_set_task(task);
    assert_int_equal(tutti__log_set_file(f->log), TUTTI_OK);
    /* The file of a pattern without %t gets the task's number. */
    snprintf(f->log + strlen(f->log), sizeof(f->log) - strlen(f->log),
             ".%d", task);
    return f;
}

static void fixture_free(fixture_t *f)
{
    assert_int_equal(tutti__log_set_file(""), TUTTI_OK);
    tutti__job_stop(&f->job);
    tutti__coord_fini(&f->job);
    tutti__member_fini(&f->job);
    tutti__job_fini(&f->job);
    tutti__registry_free(&f->reg); /* none loaded but by a test */
    tutti__config_free(&f->cfg);
    test_rmtree(f->tmp.dir);
    free(f);
}

/* Hands @p m from task @p from to the job, as the control thread does
 * with what the wire brought: 1 if it was taken. */
static int arrive(fixture_t *f, tutti__ctrl_msg_t *m, int from)
{
    char why[200];
    pthread_mutex_lock(&f->job.lock);
    int ok = tutti__ctrl_accept(m, from, f->job.task, TASKS, why,
                                sizeof(why));
    if (ok)
        tutti__job_dispatch(&f->job, m);
    pthread_mutex_unlock(&f->job.lock);
    return ok;
}

/* ---- who may send what to whom ----------------------------------------- */

static void test_accept_by_role(void **state)
{
    static tutti__ctrl_msg_t m;
    char why[200];
    (void)state;
    for (uint32_t type = 1; type < TUTTI_CTRL_TYPES; type++) {
        int answer = type == TUTTI_CTRL_GROUP ||
                     type == TUTTI_CTRL_GROUP_ERR ||
                     type == TUTTI_CTRL_INST_OK ||
                     type == TUTTI_CTRL_INST_ERR ||
                     type == TUTTI_CTRL_SUM_DONE;
        int request = type == TUTTI_CTRL_JOIN ||
                      type == TUTTI_CTRL_JOIN_CANCEL ||
                      type == TUTTI_CTRL_INST ||
                      type == TUTTI_CTRL_INST_TIMEOUT ||
                      type == TUTTI_CTRL_SUM;
        for (int from = 0; from < 3; from++) {
            for (int to = 0; to < 3; to++) {
                memset(&m, 0, sizeof(m));
                m.type = type;
                int want = type != TUTTI_CTRL_TASK_DEAD &&
                           (!answer || from == 0) && (!request || to == 0);
                if (tutti__ctrl_accept(&m, from, to, 3, why, sizeof(why)) !=
                    want)
                    fail_msg("type %s from task %d at task %d: expected %s",
                             tutti__ctrl_type_name(type), from, to,
                             want ? "taken" : "dropped");
            }
        }
    }
    memset(&m, 0, sizeof(m));
    m.type = TUTTI_CTRL_GROUP;
    assert_int_equal(tutti__ctrl_accept(&m, 1, 2, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame GROUP from task 1 dropped: only "
                             "task 0 (the coordinator) sends it");
    m.type = TUTTI_CTRL_JOIN;
    assert_int_equal(tutti__ctrl_accept(&m, 2, 1, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame JOIN from task 2 dropped: only "
                             "task 0 (the coordinator) takes it, this is "
                             "task 1");
    m.type = TUTTI_CTRL_SUM_DONE;
    assert_int_equal(tutti__ctrl_accept(&m, 3, 0, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame SUM_DONE from task 3 dropped: "
                             "only task 0 (the coordinator) sends it");
    m.type = TUTTI_CTRL_TASK_DEAD;
    assert_int_equal(tutti__ctrl_accept(&m, 3, 0, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame from task 3 dropped: type 10 is "
                             "not one a task sends");
    m.type = 99;
    assert_int_equal(tutti__ctrl_accept(&m, 3, 0, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame from task 3 dropped: type 99 is "
                             "not one a task sends");
    m.type = TUTTI_CTRL_ABORT;
    assert_int_equal(tutti__ctrl_accept(&m, 4, 0, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame from task 4 dropped: expected a "
                             "task of 0..3");
    m.len = TUTTI_CTRL_PAYLOAD + 1;
    assert_int_equal(tutti__ctrl_accept(&m, 3, 1, 4, why, sizeof(why)), 0);
    assert_string_equal(why, "control frame ABORT from task 3 dropped: "
                             "payload of 4057 bytes, at most 4056");
    /* Accepted: the sender is the connection's, unused bytes zero. */
    m.len = 2;
    m.from_task = 0;
    memset(m.payload, 'x', sizeof(m.payload));
    assert_int_equal(tutti__ctrl_accept(&m, 3, 1, 4, why, sizeof(why)), 1);
    assert_int_equal(m.from_task, 3);
    assert_int_equal(m.payload[1], 'x');
    assert_int_equal(m.payload[2], 0);
    assert_int_equal(m.payload[TUTTI_CTRL_PAYLOAD - 1], 0);
}

/* ---- the coordinator's table at a member ------------------------------- */

/* A GROUP frame for device @p device of group KEY: @p n members (task,
 * device index, host), @p num_hosts hosts named "h0", "h1"..., the
 * distinct tasks counted. */
static void group_frame(tutti__ctrl_msg_t *m, int device, int n,
                        const int (*members)[3], int num_hosts)
{
    memset(m, 0, sizeof(*m));
    tutti__job_msg_init(m, TUTTI_CTRL_GROUP, KEY, 0, device);
    tutti__group_payload_t *gp = (tutti__group_payload_t *)m->payload;
    int tasks = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i; k++)
            seen |= members[k][0] == members[i][0];
        tasks += !seen;
        gp->members[i] = (tutti_locality_t){members[i][0], members[i][1],
                                            members[i][2], 0};
    }
    gp->size = n;
    gp->num_tasks = tasks;
    gp->num_hosts = num_hosts;
    char *names = (char *)gp->members + (size_t)n * sizeof(tutti_locality_t);
    for (int h = 0; h < num_hosts; h++)
        snprintf(names + h * TUTTI_HOST_NAME_MAX, TUTTI_HOST_NAME_MAX, "h%d",
                 h);
    m->len = (uint32_t)(sizeof(*gp) + (size_t)n * sizeof(tutti_locality_t) +
                        (size_t)num_hosts * TUTTI_HOST_NAME_MAX);
}

/* The coordinator's answer to the next join, handed over in place. */
static tutti__ctrl_msg_t answer;

static void answer_join(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    (void)msg;
    answer.from_task = TUTTI__COORDINATOR_TASK;
    tutti__job_dispatch(job, &answer);
}

/* Task 0 joins group KEY as cpu:0 of 2 and gets @p answer: the status,
 * the table in @p table_out. */
static tutti_status_t join_with(fixture_t *f, tutti__group_table_t *table)
{
    tutti__job_on(&f->job, TUTTI_CTRL_JOIN, answer_join);
    memset(table, 0, sizeof(*table));
    return tutti__member_join(&f->job, KEY, 2, TUTTI_DEVICE_CPU, 0, NULL,
                              TUTTI_ORDER_TASK, 0, 5.0, table);
}

static tutti__group_payload_t *table_of(tutti__ctrl_msg_t *m)
{
    return (tutti__group_payload_t *)m->payload;
}

/* Joins with the table in @p answer and expects it refused with
 * TUTTI_ERR_PEER and "group 0x2a: the coordinator's table: " @p what. */
static void expect_refused(fixture_t *f, const char *what)
{
    tutti__group_table_t t;
    char want[400];
    snprintf(want, sizeof(want), "group 0x2a: the coordinator's table: %s",
             what);
    assert_int_equal(join_with(f, &t), TUTTI_ERR_PEER);
    assert_string_equal(tutti_last_error(), want);
    assert_null(t.members);
    test_expect_in_file(f->log, want);
}

static const int two[2][3] = {{0, 0, 0}, {3, 0, 1}};

static void test_table_taken(void **state)
{
    fixture_t *f = fixture(0);
    tutti__group_table_t t;
    (void)state;
    group_frame(&answer, 0, 2, two, 2);
    assert_int_equal(join_with(f, &t), TUTTI_OK);
    assert_int_equal(t.size, 2);
    assert_int_equal(t.num_tasks, 2);
    assert_int_equal(t.num_hosts, 2);
    assert_int_equal(t.members[1].task, 3);
    assert_int_equal(t.members[1].host, 1);
    assert_string_equal(t.hosts[1], "h1");
    assert_null(t.pci);
    free(t.members);
    free(t.hosts);
    fixture_free(f);
}

static void test_table_wrong_size(void **state)
{
    static const int three[3][3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
    fixture_t *f = fixture(0);
    (void)state;
    group_frame(&answer, 0, 3, three, 1);
    expect_refused(f, "size 3: expected 2, the size this member joined "
                      "with");
    fixture_free(f);
}

static void test_table_index_out_of_range(void **state)
{
    fixture_t *f = fixture(0);
    (void)state;
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->members[1].task = TASKS;
    expect_refused(f, "member 1: task 4: expected 0..3, the job's tasks");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->members[1].task = -1;
    expect_refused(f, "member 1: task -1: expected 0..3, the job's tasks");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->members[1].host = 2;
    expect_refused(f, "member 1: host 2: expected 0..1, the table's hosts");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->members[0].host = -1;
    expect_refused(f, "member 0: host -1: expected 0..1, the table's hosts");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->members[1].device_index = -3;
    expect_refused(f, "member 1: device_index -3: expected at least 0");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->members[1].numa_node = -2;
    expect_refused(f, "member 1: numa_node -2: expected -1 (unknown) or at "
                      "least 0");
    fixture_free(f);
}

static void test_table_counts(void **state)
{
    fixture_t *f = fixture(0);
    (void)state;
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->num_tasks = 5;
    expect_refused(f, "num_tasks 5: expected 1..4, the job's tasks");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->num_tasks = 1;
    expect_refused(f, "num_tasks 1: expected 2, the tasks among its "
                      "members");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->num_hosts = 0;
    expect_refused(f, "num_hosts 0: expected 1..8");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->num_hosts = 9;
    expect_refused(f, "num_hosts 9: expected 1..8");
    group_frame(&answer, 0, 2, two, 2);
    table_of(&answer)->has_pci = 1;
    expect_refused(f, "has_pci 1: expected 0 for a cpu group");
    group_frame(&answer, 0, 2, two, 2);
    answer.len -= 1;
    expect_refused(f, "175 bytes: expected at least 176 for 2 members on 2 "
                      "hosts");
    fixture_free(f);
}

static void test_table_host_name_unterminated(void **state)
{
    fixture_t *f = fixture(0);
    (void)state;
    group_frame(&answer, 0, 2, two, 2);
    char *names = (char *)table_of(&answer)->members +
                  2 * sizeof(tutti_locality_t);
    memset(names + TUTTI_HOST_NAME_MAX, 'h', TUTTI_HOST_NAME_MAX);
    expect_refused(f, "host 1: name not NUL-terminated within its 64 bytes");
    fixture_free(f);
}

static void test_table_own_member(void **state)
{
    static const int others[2][3] = {{1, 0, 0}, {3, 0, 1}};
    static const int twice[2][3] = {{0, 0, 0}, {0, 0, 1}};
    fixture_t *f = fixture(0);
    (void)state;
    group_frame(&answer, 0, 2, others, 2);
    expect_refused(f, "no member is this one, task 0 cpu:0");
    group_frame(&answer, 0, 2, twice, 2);
    table_of(&answer)->num_tasks = 1;
    expect_refused(f, "members 0 and 1 are both task 0 cpu:0");
    fixture_free(f);
}

/* A member's wait for its table: a GROUP from a task other than the
 * coordinator is dropped before any handler sees it. */
static void test_group_from_member_dropped(void **state)
{
    static tutti__ctrl_msg_t m;
    static const int mine[2][3] = {{0, 0, 0}, {2, 1, 0}};
    fixture_t *f = fixture(2);
    tutti__join_wait_t w;
    (void)state;
    memset(&w, 0, sizeof(w));
    w.key = KEY;
    w.size = 2;
    w.device_type = TUTTI_DEVICE_CPU;
    w.device_index = 1;
    pthread_mutex_lock(&f->job.lock);
    tutti__member_wait_add(&f->job, &w);
    pthread_mutex_unlock(&f->job.lock);
    group_frame(&m, 1, 2, mine, 1);
    assert_int_equal(arrive(f, &m, 1), 0);
    assert_int_equal(w.done, 0);
    assert_int_equal(arrive(f, &m, 0), 1);
    assert_int_equal(w.done, 1);
    assert_int_equal(w.status, TUTTI_OK);
    assert_int_equal(w.table.members[1].device_index, 1);
    pthread_mutex_lock(&f->job.lock);
    tutti__member_wait_remove(&f->job, &w);
    pthread_mutex_unlock(&f->job.lock);
    free(w.table.members);
    free(w.table.hosts);
    fixture_free(f);
}

/* ---- decisions at a member --------------------------------------------- */

static void test_decision_checks(void **state)
{
    static tutti__ctrl_msg_t m;
    fixture_t *f = fixture(1);
    tutti__job_member_t g = {.group_key = KEY};
    tutti__decision_payload_t *d = (tutti__decision_payload_t *)m.payload;
    (void)state;
    assert_int_equal(tutti__member_add(&f->job, &g), TUTTI_OK);
    tutti__job_msg_init(&m, TUTTI_CTRL_INST_OK, KEY, 7, -1);
    m.len = sizeof(*d);
    d->details_len = TUTTI_DETAILS_MAX + 1;
    assert_int_equal(arrive(f, &m, 0), 1);
    tutti__decision_t *dec = tutti__member_take(&f->job, &g);
    assert_non_null(dec);
    assert_int_equal(dec->status, TUTTI_ERR_PEER);
    assert_int_equal(dec->details_len, 0);
    assert_string_equal(dec->detail, "instance 0x7 of group 0x2a: the "
                                     "coordinator's decision: details_len "
                                     "2049: expected at most 2048");
    free(dec);
    d->details_len = 3;
    d->group_details_len = TUTTI_GROUP_DETAILS_MAX + 1;
    assert_int_equal(arrive(f, &m, 0), 1);
    dec = tutti__member_take(&f->job, &g);
    assert_int_equal(dec->status, TUTTI_ERR_PEER);
    assert_string_equal(dec->detail, "instance 0x7 of group 0x2a: the "
                                     "coordinator's decision: "
                                     "group_details_len 513: expected at "
                                     "most 512");
    free(dec);
    d->group_details_len = 2;
    assert_int_equal(arrive(f, &m, 0), 1);
    dec = tutti__member_take(&f->job, &g);
    assert_int_equal(dec->status, TUTTI_OK);
    assert_int_equal(dec->details_len, 3);
    assert_int_equal(dec->group_details_len, 2);
    free(dec);
    /* A refusal carries an error status. */
    m.type = TUTTI_CTRL_INST_ERR;
    m.status = TUTTI_INPROGRESS;
    assert_int_equal(arrive(f, &m, 0), 1);
    dec = tutti__member_take(&f->job, &g);
    assert_int_equal(dec->status, TUTTI_ERR_PEER);
    assert_string_equal(dec->detail, "instance 0x7 of group 0x2a: the "
                                     "coordinator's decision: a refusal "
                                     "with status 1: expected an error "
                                     "status");
    free(dec);
    m.status = TUTTI_ERR_MISMATCH;
    snprintf(d->detail, sizeof(d->detail), "members disagree");
    assert_int_equal(arrive(f, &m, 0), 1);
    dec = tutti__member_take(&f->job, &g);
    assert_int_equal(dec->status, TUTTI_ERR_MISMATCH);
    assert_string_equal(dec->detail, "members disagree");
    free(dec);
    /* From a task other than the coordinator: nothing queued. */
    assert_int_equal(arrive(f, &m, 2), 0);
    assert_null(tutti__member_take(&f->job, &g));
    tutti__member_remove(&f->job, &g);
    fixture_free(f);
}

/* ---- sums -------------------------------------------------------------- */

static void sum_frame(tutti__ctrl_msg_t *m, uint64_t seq, uint64_t value)
{
    uint64_t p[2] = {seq, value};
    tutti__job_msg_init(m, TUTTI_CTRL_SUM, 0, 0, -1);
    memcpy(m->payload, p, sizeof(p));
    m->len = sizeof(p);
}

static void test_sum_counts_each_task_once(void **state)
{
    static tutti__ctrl_msg_t m;
    fixture_t *f = fixture(0);
    tutti__job_sum_t *s = &f->job.sum;
    (void)state;
    s->busy = 1; /* task 0's own call waits for round 0 */
    sum_frame(&m, 0, 5);
    assert_int_equal(arrive(f, &m, 1), 1);
    sum_frame(&m, 0, 5);
    assert_int_equal(arrive(f, &m, 1), 1);
    sum_frame(&m, 0, 5);
    assert_int_equal(arrive(f, &m, 1), 1);
    sum_frame(&m, 0, 1);
    assert_int_equal(arrive(f, &m, 0), 1);
    /* Three of the four tasks' values, whatever the frames. */
    assert_int_equal(s->coord_arrived, 2);
    assert_int_equal(s->done, 0);
    test_expect_in_file(f->log, "task 1 sent its value of sum round 0 a "
                                "second time; dropped");
    sum_frame(&m, 0, 7);
    assert_int_equal(arrive(f, &m, 2), 1);
    assert_int_equal(s->done, 0);
    sum_frame(&m, 0, 100);
    assert_int_equal(arrive(f, &m, 3), 1);
    assert_int_equal(s->done, 1);
    assert_int_equal(s->result, 113);
    assert_int_equal(s->coord_seq, 1);
    /* The next round starts with no task counted. */
    s->seq = 1;
    s->done = 0;
    sum_frame(&m, 1, 2);
    assert_int_equal(arrive(f, &m, 1), 1);
    assert_int_equal(s->coord_arrived, 1);
    fixture_free(f);
}

/* ---- joins and proposals at the coordinator ---------------------------- */

/* A JOIN from task 0 for device @p device of group @p key, of @p size
 * cpu devices. */
static void join_frame(tutti__ctrl_msg_t *m, uint64_t key, int device,
                       int size)
{
    memset(m, 0, sizeof(*m));
    tutti__job_msg_init(m, TUTTI_CTRL_JOIN, key, 0, device);
    tutti__join_payload_t *j = (tutti__join_payload_t *)m->payload;
    j->size = size;
    j->device_type = TUTTI_DEVICE_CPU;
    j->device_index = device;
    snprintf(j->host, sizeof(j->host), "h0");
    j->numa_node = -1;
    j->device_order = TUTTI_ORDER_TASK;
    m->len = sizeof(*j);
}

/* Task 0 sends @p m (a JOIN for device @p w->device_index) to itself
 * while @p w waits: the coordinator's answer. */
static void join_answer(fixture_t *f, tutti__ctrl_msg_t *m,
                        tutti__join_wait_t *w)
{
    tutti__join_payload_t *j = (tutti__join_payload_t *)m->payload;
    memset(w, 0, sizeof(*w));
    w->key = m->group_key;
    w->size = j->size;
    w->device_type = TUTTI_DEVICE_CPU;
    w->device_index = m->device_index;
    pthread_mutex_lock(&f->job.lock);
    tutti__member_wait_add(&f->job, w);
    tutti__job_send(&f->job, 0, m);
    tutti__member_wait_remove(&f->job, w);
    pthread_mutex_unlock(&f->job.lock);
}

static void test_join_checks(void **state)
{
    static tutti__ctrl_msg_t m;
    fixture_t *f = fixture(0);
    tutti__join_payload_t *j = (tutti__join_payload_t *)m.payload;
    tutti__join_wait_t w;
    (void)state;
    join_frame(&m, 0x2b, 0, 2);
    memset(j->host, 'h', sizeof(j->host));
    join_answer(f, &m, &w);
    assert_int_equal(w.done, 1);
    assert_int_equal(w.status, TUTTI_ERR_PEER);
    assert_string_equal(w.error, "group 0x2b: task 0's join: host name not "
                                 "NUL-terminated within its 64 bytes");
    test_expect_in_file(f->log, w.error);
    join_frame(&m, 0x2b, 0, 2);
    j->num_mods = TUTTI__MAX_FINGERPRINTS + 1;
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_ERR_PEER);
    assert_string_equal(w.error, "group 0x2b: task 0's join: num_mods 25: "
                                 "expected 0..24");
    join_frame(&m, 0x2b, 0, 2);
    j->num_mods = 1;
    memset(j->mods[0].name, 'm', sizeof(j->mods[0].name));
    join_answer(f, &m, &w);
    assert_string_equal(w.error, "group 0x2b: task 0's join: module 0: name "
                                 "or version not NUL-terminated within its "
                                 "64 or 32 bytes");
    join_frame(&m, 0x2b, 0, 2);
    j->device_index = 1;
    join_answer(f, &m, &w);
    assert_string_equal(w.error, "group 0x2b: task 0's join: device_index 1: "
                                 "expected 0, the frame's device");
    join_frame(&m, 0x2b, 0, 2);
    j->numa_node = -7;
    join_answer(f, &m, &w);
    assert_string_equal(w.error, "group 0x2b: task 0's join: numa_node -7: "
                                 "expected -1 (unknown) or at least 0");
    join_frame(&m, 0x2b, 0, 2);
    j->size = TUTTI__MAX_MEMBERS + 1;
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_ERR_MISMATCH);
    assert_string_equal(w.error, "group 0x2b: group size 201: expected "
                                 "1..200 for cpu devices");
    join_frame(&m, 0x2b, 0, 3);
    j->has_order = 1;
    j->order[0] = 2;
    j->order[1] = 0;
    j->order[2] = 2;
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_ERR_MISMATCH);
    assert_string_equal(w.error, "group 0x2b: ring_order is not a "
                                 "permutation of 0..2: ring_order[2] is 2");
    /* None of them left a group waiting. */
    assert_null(f->job.coord->groups);
    fixture_free(f);
}

static void test_join_bounds(void **state)
{
    static tutti__ctrl_msg_t m;
    fixture_t *f = fixture(0);
    tutti__coord_t *r = f->job.coord;
    tutti__join_wait_t w;
    (void)state;
    /* The same device twice fails the group; once both joins learnt why,
     * nothing of it stays. */
    join_frame(&m, 0x30, 0, 2);
    join_answer(f, &m, &w);
    assert_int_equal(w.done, 0);
    assert_int_equal(r->num_groups, 1);
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_ERR_MISMATCH);
    assert_string_equal(w.error, "group 0x30: task 0 cpu:0 joined twice");
    assert_int_equal(r->num_groups, 0);
    /* Groups waiting for members: at most so many. */
    for (int i = 0; i < TUTTI__COORD_MAX_PENDING_GROUPS; i++) {
        join_frame(&m, 0x1000 + (uint64_t)i, 0, 2);
        join_answer(f, &m, &w);
        assert_int_equal(w.done, 0);
    }
    assert_int_equal(r->num_groups, TUTTI__COORD_MAX_PENDING_GROUPS);
    join_frame(&m, 0x9999, 0, 2);
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_ERR_UNSUPPORTED);
    assert_string_equal(w.error, "group 0x9999: the coordinator has 1024 "
                                 "groups waiting for members, as many as it "
                                 "keeps at once");
    assert_int_equal(r->num_groups, TUTTI__COORD_MAX_PENDING_GROUPS);
    /* One that joins a waiting group still forms it. */
    join_frame(&m, 0x1000, 1, 2);
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_OK);
    free(w.table.members);
    free(w.table.hosts);
    assert_int_equal(r->num_groups, TUTTI__COORD_MAX_PENDING_GROUPS - 1);
    fixture_free(f);
}

/* Forms group KEY of cpu:0 and cpu:1 on task 0 (ranks 0 and 1). */
static void form_pair(fixture_t *f)
{
    static tutti__ctrl_msg_t m;
    tutti__join_wait_t w;
    join_frame(&m, KEY, 0, 2);
    join_answer(f, &m, &w);
    join_frame(&m, KEY, 1, 2);
    join_answer(f, &m, &w);
    assert_int_equal(w.status, TUTTI_OK);
    free(w.table.members);
    free(w.table.hosts);
}

/* A proposal of instance @p ikey from task 0's device @p device: rank
 * @p rank of a group of 2, an allreduce of 8 float32 unless changed. */
static tutti__inst_payload_t *inst_frame(tutti__ctrl_msg_t *m, uint64_t gkey,
                                         uint64_t ikey, int device, int rank)
{
    memset(m, 0, sizeof(*m));
    tutti__job_msg_init(m, TUTTI_CTRL_INST, gkey, ikey, device);
    tutti__inst_payload_t *p = (tutti__inst_payload_t *)m->payload;
    p->rank = rank;
    p->size = 2;
    p->collective = TUTTI_COLL_ALLREDUCE;
    p->dtype = TUTTI_FLOAT32;
    p->op = TUTTI_OP_SUM;
    p->device_type = TUTTI_DEVICE_CPU;
    p->num_tasks = 1;
    p->count = 8;
    m->len = sizeof(*p);
    return p;
}

/* Sends the proposal in @p m to task 0 (itself) and takes the one
 * decision that came back to @p g. */
static tutti__decision_t *propose(fixture_t *f, tutti__ctrl_msg_t *m,
                                  tutti__job_member_t *g)
{
    pthread_mutex_lock(&f->job.lock);
    tutti__job_send(&f->job, 0, m);
    pthread_mutex_unlock(&f->job.lock);
    tutti__decision_t *d = tutti__member_take(&f->job, g);
    if (d != NULL)
        assert_null(d->next);
    return d;
}

/* Expects @p m refused with @p st and "instance 0x7 of group 0x2a: task
 * 0's proposal: " @p what. */
static void expect_inst_refused(fixture_t *f, tutti__ctrl_msg_t *m,
                                tutti__job_member_t *g, tutti_status_t st,
                                const char *what)
{
    char want[400];
    snprintf(want, sizeof(want), "instance 0x%llx of group 0x%llx: task 0's "
             "proposal: %s", (unsigned long long)m->instance_key,
             (unsigned long long)m->group_key, what);
    tutti__decision_t *d = propose(f, m, g);
    assert_non_null(d);
    assert_int_equal(d->status, st);
    assert_string_equal(d->detail, want);
    test_expect_in_file(f->log, want);
    free(d);
}

static void test_inst_checks(void **state)
{
    static tutti__ctrl_msg_t m;
    fixture_t *f = fixture(0);
    tutti__job_member_t g = {.group_key = KEY};
    tutti__inst_payload_t *p;
    (void)state;
    form_pair(f);
    assert_int_equal(tutti__member_add(&f->job, &g), TUTTI_OK);
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->collective = TUTTI_COLL_BROADCAST;
    p->root = 2;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "root 2: expected 0..1 for broadcast");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->collective = TUTTI_COLL_GATHER;
    p->root = -1;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "root -1: expected 0..1 for gather");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->dtype = 99;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "dtype 99: expected 0..9");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->op = -1;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "op -1: expected 0..4");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->collective = TUTTI_COLL_COUNT;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "collective 8: expected 0..7");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->size = 3;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "size 3: expected 2, the group's");
    p = inst_frame(&m, KEY, 7, 0, 2);
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "rank 2: expected 0..1");
    p = inst_frame(&m, KEY, 7, 1, 0);
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "rank 0: expected the sender's own; rank 0 is task "
                        "0 device 0, the sender task 0 device 1");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->num_tasks = 2;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "num_tasks 2: expected 1, the group's");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->device_type = TUTTI_DEVICE_CUDA;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "device_type 1: expected 0, the group's");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->count = SIZE_MAX / 8 / 2 + 1;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "count 1152921504606846976: expected at most "
                        "1152921504606846975 in a group of 2");
    p = inst_frame(&m, KEY, 7, 0, 0);
    p->count = (uint64_t)TUTTI_COUNT_PER_RANK;
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "count per-rank: expected a count for allreduce "
                        "(per-rank counts are for allgather, reduce_scatter "
                        "and alltoall)");
    p = inst_frame(&m, KEY, 7, 0, 0);
    memset(p->algorithm, 'a', sizeof(p->algorithm));
    expect_inst_refused(f, &m, &g, TUTTI_ERR_INVALID_ARG,
                        "algorithm not NUL-terminated within its 64 bytes");
    inst_frame(&m, 0x99, 7, 0, 0);
    tutti__job_member_t other = {.group_key = 0x99};
    assert_int_equal(tutti__member_add(&f->job, &other), TUTTI_OK);
    expect_inst_refused(f, &m, &other, TUTTI_ERR_NOT_FOUND,
                        "the coordinator keeps no record of group 0x99: "
                        "never formed, or not used while 4096 others "
                        "formed");
    tutti__member_remove(&f->job, &other);
    /* None of them is waiting for the other member. */
    assert_int_equal(f->job.coord->num_insts, 0);

    /* A proposal in range waits for the other member's; the same rank
     * again is dropped, and only a member that proposed ends the wait. */
    inst_frame(&m, KEY, 8, 0, 0);
    assert_null(propose(f, &m, &g));
    assert_null(propose(f, &m, &g));
    test_expect_in_file(f->log, "instance 0x8 of group 0x2a: task 0 proposed "
                                "rank 0 a second time, dropped");
    assert_int_equal(f->job.coord->num_insts, 1);
    tutti__job_msg_init(&m, TUTTI_CTRL_INST_TIMEOUT, KEY, 8, 0);
    pthread_mutex_lock(&f->job.lock);
    m.from_task = 2;
    tutti__job_dispatch(&f->job, &m);
    pthread_mutex_unlock(&f->job.lock);
    test_expect_in_file(f->log, "instance 0x8 of group 0x2a: INST_TIMEOUT "
                                "from task 2, which proposed no rank of it, "
                                "dropped");
    assert_int_equal(f->job.coord->num_insts, 1);
    /* The other rank's proposal: decided (no rule matches here, so the
     * decision refuses it for that reason, not for a field). */
    inst_frame(&m, KEY, 8, 1, 1);
    tutti__decision_t *d = propose(f, &m, &g);
    assert_non_null(d);
    assert_int_equal(d->status, TUTTI_ERR_NOT_FOUND);
    assert_non_null(strstr(d->detail, "no selection rule matches allreduce"));
    free(d);
    assert_int_equal(f->job.coord->num_insts, 0);
    tutti__member_remove(&f->job, &g);
    fixture_free(f);
}

/* Forms group @p key of cpu:0..@p n - 1 on task 0, member i on host
 * @p hosts[i]. */
static void form_on_hosts(fixture_t *f, uint64_t key,
                          const char *const *hosts, int n)
{
    static tutti__ctrl_msg_t m;
    tutti__join_wait_t w;
    for (int i = 0; i < n; i++) {
        join_frame(&m, key, i, n);
        tutti__join_payload_t *j = (tutti__join_payload_t *)m.payload;
        snprintf(j->host, sizeof(j->host), "%s", hosts[i]);
        join_answer(f, &m, &w);
    }
    assert_int_equal(w.status, TUTTI_OK);
    free(w.table.members);
    free(w.table.hosts);
}

/* Selection at the coordinator sees the hosts a group spans: its formed
 * record keeps their number, and a rule's hosts: matches it. */
static void test_decision_reads_hosts(void **state)
{
    static tutti__ctrl_msg_t m;
    static const char *const same[] = {"h0", "h0"};
    static const char *const apart[] = {"h0", "h1"};
    static const struct {
        uint64_t key;
        const char *const *hosts;
        int num_hosts;
        const char *want;
        int line;
    } groups[] = {{0x2a, same, 1, "RecursiveDoublingAllreduce", 3},
                  {0x2b, apart, 2, "RingAllreduce", 2}};
    fixture_t *f = fixture(0);
    tutti__strlist_t dirs = {NULL, 0}, all = {NULL, 0};
    char path[400], want[600];
    (void)state;
    snprintf(path, sizeof(path), "%s/rules.yaml", f->tmp.dir);
    test_write_file(path, "selection:\n"
                    "  - { collective: allreduce, hosts: 2-,"
                    " algorithm: RingAllreduce }\n"
                    "  - { collective: allreduce,"
                    " algorithm: RecursiveDoublingAllreduce }\n");
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(tutti__strlist_push(&dirs, TUTTI_TEST_BUILDDIR
                                         "/algorithms/ring"), TUTTI_OK);
    assert_int_equal(tutti__strlist_push(&dirs, TUTTI_TEST_BUILDDIR
                                         "/algorithms/tree"), TUTTI_OK);
    assert_int_equal(tutti__registry_load(&f->reg, &dirs, &all), TUTTI_OK);
    tutti__strlist_free(&dirs);
    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        tutti__job_member_t g = {.group_key = groups[i].key};
        form_on_hosts(f, groups[i].key, groups[i].hosts, 2);
        const coord_formed_t *rec =
            tutti__coord_formed_find(f->job.coord, groups[i].key);
        assert_non_null(rec);
        assert_int_equal(rec->num_hosts, groups[i].num_hosts);
        assert_int_equal(tutti__member_add(&f->job, &g), TUTTI_OK);
        inst_frame(&m, groups[i].key, 7, 0, 0);
        assert_null(propose(f, &m, &g));
        inst_frame(&m, groups[i].key, 7, 1, 1);
        tutti__decision_t *d = propose(f, &m, &g);
        assert_non_null(d);
        if (d->status != TUTTI_OK)
            fail_msg("group 0x%llx: %s", (unsigned long long)groups[i].key,
                     d->detail);
        assert_string_equal(d->algorithm, groups[i].want);
        snprintf(want, sizeof(want), "rule %s:%d", path, groups[i].line);
        assert_string_equal(d->detail, want);
        free(d);
        tutti__member_remove(&f->job, &g);
    }
    fixture_free(f);
}

/* A group whose hosts hold different numbers of members (2 on h0, 1 on
 * h1): the hierarchical allreduce declines it, so selection goes on to
 * the next rule, and a call that names it is refused with the counts. */
static void test_uneven_hosts_declined(void **state)
{
    static tutti__ctrl_msg_t m;
    static const char *const uneven[] = {"h0", "h0", "h1"};
    static const char *const names[] = {"", "HierarchicalAllreduce"};
    fixture_t *f = fixture(0);
    tutti__strlist_t dirs = {NULL, 0}, all = {NULL, 0};
    tutti__job_member_t g = {.group_key = 0x2c};
    char path[400], want[600];
    (void)state;
    snprintf(path, sizeof(path), "%s/rules.yaml", f->tmp.dir);
    test_write_file(path, "selection:\n"
                    "  - { collective: allreduce, hosts: 2-,"
                    " algorithm: HierarchicalAllreduce }\n"
                    "  - { collective: allreduce,"
                    " algorithm: RingAllreduce }\n");
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(tutti__strlist_push(&dirs, TUTTI_TEST_BUILDDIR
                                         "/algorithms/ring"), TUTTI_OK);
    assert_int_equal(tutti__strlist_push(&dirs, TUTTI_TEST_BUILDDIR
                                         "/algorithms/hier"), TUTTI_OK);
    assert_int_equal(tutti__registry_load(&f->reg, &dirs, &all), TUTTI_OK);
    tutti__strlist_free(&dirs);
    form_on_hosts(f, 0x2c, uneven, 3);
    assert_int_equal(tutti__coord_formed_find(f->job.coord, 0x2c)->num_hosts,
                     2);
    assert_int_equal(tutti__member_add(&f->job, &g), TUTTI_OK);
    for (int c = 0; c < 2; c++) {
        tutti__decision_t *d = NULL;
        for (int r = 0; r < 3; r++) {
            tutti__inst_payload_t *p = inst_frame(&m, 0x2c, 7 + c, r, r);
            p->size = 3;
            snprintf(p->algorithm, sizeof(p->algorithm), "%s", names[c]);
            d = propose(f, &m, &g);
            if (r < 2)
                assert_null(d);
        }
        assert_non_null(d);
        if (c == 0) {
            assert_int_equal(d->status, TUTTI_OK);
            assert_string_equal(d->algorithm, "RingAllreduce");
            snprintf(want, sizeof(want), "rule %s:3", path);
            assert_string_equal(d->detail, want);
        } else {
            assert_int_equal(d->status, TUTTI_ERR_UNSUPPORTED);
            if (strstr(d->detail, "hosts hold different numbers of members "
                       "(rank 0's host 2, rank 2's host 1); expected the "
                       "same number on every host") == NULL)
                fail_msg("refusal '%s' does not give the hosts' counts",
                         d->detail);
        }
        free(d);
    }
    tutti__member_remove(&f->job, &g);
    fixture_free(f);
}

static void test_inst_bound(void **state)
{
    static tutti__ctrl_msg_t m;
    fixture_t *f = fixture(0);
    tutti__job_member_t g = {.group_key = KEY};
    (void)state;
    form_pair(f);
    assert_int_equal(tutti__member_add(&f->job, &g), TUTTI_OK);
    for (int i = 0; i < TUTTI__COORD_MAX_PENDING_INSTANCES; i++) {
        inst_frame(&m, KEY, 0x100 + (uint64_t)i, 0, 0);
        pthread_mutex_lock(&f->job.lock);
        tutti__job_send(&f->job, 0, &m);
        pthread_mutex_unlock(&f->job.lock);
    }
    assert_null(tutti__member_take(&f->job, &g));
    assert_int_equal(f->job.coord->num_insts,
                     TUTTI__COORD_MAX_PENDING_INSTANCES);
    inst_frame(&m, KEY, 7, 0, 0);
    expect_inst_refused(f, &m, &g, TUTTI_ERR_UNSUPPORTED,
                        "the coordinator has 65536 instances waiting for "
                        "their members' proposals, as many as it keeps at "
                        "once");
    /* One already waiting still takes its other member's proposal. */
    inst_frame(&m, KEY, 0x100, 1, 1);
    tutti__decision_t *d = propose(f, &m, &g);
    assert_non_null(d);
    assert_int_equal(d->instance_key, 0x100);
    free(d);
    assert_int_equal(f->job.coord->num_insts,
                     TUTTI__COORD_MAX_PENDING_INSTANCES - 1);
    tutti__member_remove(&f->job, &g);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_by_role),
        cmocka_unit_test(test_table_taken),
        cmocka_unit_test(test_table_wrong_size),
        cmocka_unit_test(test_table_index_out_of_range),
        cmocka_unit_test(test_table_counts),
        cmocka_unit_test(test_table_host_name_unterminated),
        cmocka_unit_test(test_table_own_member),
        cmocka_unit_test(test_group_from_member_dropped),
        cmocka_unit_test(test_decision_checks),
        cmocka_unit_test(test_sum_counts_each_task_once),
        cmocka_unit_test(test_join_checks),
        cmocka_unit_test(test_join_bounds),
        cmocka_unit_test(test_inst_checks),
        cmocka_unit_test(test_inst_bound),
        cmocka_unit_test(test_decision_reads_hosts),
        cmocka_unit_test(test_uneven_hosts_declined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
