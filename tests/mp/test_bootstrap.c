/*
 * Unit tests for core/bootstrap.c: task, count, local rank and job id from
 * the API, TUTTI_*, Open MPI, MPICH/Hydra PMI and Slurm variables (set with
 * setenv, cleared before every test), the precedence between them, job id
 * sanitizing, and the error for every partial or inconsistent set.
 *
 * Then real launches of tests/mp/launch_worker: 4 tasks under Open MPI's
 * mpirun (skipped where it is missing), and 3 tasks started here with only
 * Slurm's, or only PMI's, variables set.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "job/bootstrap.h"
#include "base/log.h"
#include "test_util.h"

#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/launch_worker"

/* Every variable any launcher sets that bootstrap.c reads. */
static const char *const launch_vars[] = {
    "TUTTI_RANK", "TUTTI_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_LOCAL_SIZE",
    "TUTTI_JOB_ID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "PMI_KVSNAME",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_STEPID",
};

static void clear_launch_vars(void)
{
    for (size_t i = 0; i < sizeof(launch_vars) / sizeof(launch_vars[0]); i++)
        unsetenv(launch_vars[i]);
}

static int clear_setup(void **state)
{
    (void)state;
    clear_launch_vars();
    return 0;
}

static void set(const char *name, const char *value)
{
    assert_int_equal(setenv(name, value, 1), 0);
}

/* set() of every name and value of @p vars (name, value, ..., NULL). */
static void set_all(const char *const *vars)
{
    for (; vars[0] != NULL; vars += 2)
        set(vars[0], vars[1]);
}

static tutti__bootstrap_t boot_ok(const tutti_context_params_t *p)
{
    tutti__bootstrap_t b;
    tutti_status_t st = tutti__bootstrap(p, &b);
    if (st != TUTTI_OK)
        fail_msg("bootstrap failed: %s: %s", tutti_strerror(st),
                 tutti_last_error());
    return b;
}

/* Bootstrap from the environment fails with exactly @p detail. */
static void boot_fails(const char *detail)
{
    tutti__bootstrap_t b;
    memset(&b, 0x5a, sizeof(b));
    assert_int_equal(tutti__bootstrap(NULL, &b), TUTTI_ERR_CONFIG);
    assert_string_equal(tutti_last_error(), detail);
    assert_int_equal(b.task, 0x5a5a5a5a); /* outputs only on success */
}

static void expect(const tutti__bootstrap_t *b, int task, int ntasks,
                   int local, int nlocal, const char *source, const char *job)
{
    assert_int_equal(b->task, task);
    assert_int_equal(b->num_tasks, ntasks);
    assert_int_equal(b->local_task, local);
    assert_int_equal(b->local_num_tasks, nlocal);
    assert_string_equal(b->source, source);
    assert_string_equal(b->job_id, job);
}

/* ---- single task, API, TUTTI_* ----------------------------------------- */

static void test_single_task(void **state)
{
    char pid[32];
    (void)state;
    snprintf(pid, sizeof(pid), "p%ld", (long)getpid());
    tutti__bootstrap_t b = boot_ok(NULL);
    expect(&b, 0, 1, 0, 1, "single task", pid);
    assert_string_equal(b.job_source, "process id");
    /* an allocation's shell (salloc, sbatch): SLURM_NTASKS, no SLURM_PROCID */
    set("SLURM_NTASKS", "8");
    set("SLURM_JOB_ID", "42");
    b = boot_ok(NULL);
    expect(&b, 0, 1, 0, 1, "single task", pid);
}

static void test_api_first(void **state)
{
    tutti_context_params_t p;
    (void)state;
    set_all((const char *const[]){"TUTTI_RANK", "0", "TUTTI_SIZE", "2",
        "TUTTI_JOB_ID", "fromenv", "OMPI_COMM_WORLD_RANK", "1",
        "OMPI_COMM_WORLD_SIZE", "2", NULL});
    tutti_context_params_init(&p);
    p.task = 2;
    p.num_tasks = 4;
    p.job_id = "fromapi";
    tutti__bootstrap_t b = boot_ok(&p);
    expect(&b, 2, 4, -1, -1, "api", "fromapi");
    assert_string_equal(b.job_source, "api");
    /* the API's ranks with the launcher's job id */
    unsetenv("TUTTI_JOB_ID");
    set("OMPI_MCA_ess_base_jobid", "31337");
    p.job_id = NULL;
    b = boot_ok(&p);
    expect(&b, 2, 4, -1, -1, "api", "ompi_31337");
}

static void test_tutti_before_launchers(void **state)
{
    (void)state;
    set_all((const char *const[]){"TUTTI_RANK", "1", "TUTTI_SIZE", "3",
        "TUTTI_LOCAL_RANK", "1", "TUTTI_LOCAL_SIZE", "3",
        "TUTTI_JOB_ID", "tr-1", "OMPI_COMM_WORLD_RANK", "0",
        "OMPI_COMM_WORLD_SIZE", "4", "PMI_RANK", "0", "PMI_SIZE", "5",
        "SLURM_PROCID", "0", "SLURM_NTASKS", "6", NULL});
    tutti__bootstrap_t b = boot_ok(NULL);
    expect(&b, 1, 3, 1, 3, "tutti-run/TUTTI", "tr-1");
    assert_string_equal(b.job_source, "TUTTI_JOB_ID");
}

/* Today's messages for TUTTI_* stay as they were. */
static void test_tutti_errors(void **state)
{
    (void)state;
    set("TUTTI_RANK", "1");
    boot_fails("task 1 of -1 tasks: expected 0 <= task < tasks (TUTTI_RANK "
               "and TUTTI_SIZE go together)");
    set("TUTTI_SIZE", "1");
    boot_fails("task 1 of 1 tasks: expected 0 <= task < tasks (TUTTI_RANK "
               "and TUTTI_SIZE go together)");
    set("TUTTI_SIZE", "x2");
    boot_fails("TUTTI_SIZE='x2': expected an integer 0..1048576");
    set("TUTTI_SIZE", "2");
    boot_fails("2 tasks but no job id: set TUTTI_JOB_ID (tutti-run does)");
    set("TUTTI_JOB_ID", "a.b");
    boot_fails("job id 'a.b': expected up to 40 characters of [A-Za-z0-9_-]");
    set_all((const char *const[]){"TUTTI_JOB_ID", "ok",
        "TUTTI_LOCAL_RANK", "2", "TUTTI_LOCAL_SIZE", "2", NULL});
    boot_fails("TUTTI_LOCAL_RANK=2 but TUTTI_LOCAL_SIZE=2: expected local rank "
               "< local size");
}

/* ---- Open MPI ------------------------------------------------------------ */

static void set_ompi(const char *rank, const char *size, const char *lrank,
                     const char *lsize)
{
    set("OMPI_COMM_WORLD_RANK", rank);
    set("OMPI_COMM_WORLD_SIZE", size);
    set("OMPI_COMM_WORLD_LOCAL_RANK", lrank);
    set("OMPI_COMM_WORLD_LOCAL_SIZE", lsize);
}

static void test_ompi(void **state)
{
    (void)state;
    set_ompi("2", "4", "0", "2");
    set("OMPI_MCA_ess_base_jobid", "1234");
    set("PMIX_NAMESPACE", "ignored");
    tutti__bootstrap_t b = boot_ok(NULL);
    expect(&b, 2, 4, 0, 2, "Open MPI", "ompi_1234");
    assert_string_equal(b.vars, "OMPI_COMM_WORLD_*");
    assert_string_equal(b.job_source, "OMPI_MCA_ess_base_jobid");
    /* PMIx's namespace, sanitized */
    unsetenv("OMPI_MCA_ess_base_jobid");
    set("PMIX_NAMESPACE", "prterun-node.a-4242@1");
    b = boot_ok(NULL);
    expect(&b, 2, 4, 0, 2, "Open MPI", "ompi_prterun-node_a-4242_1");
    assert_string_equal(b.job_source, "PMIX_NAMESPACE");
    /* TUTTI_JOB_ID before the launcher's */
    set("TUTTI_JOB_ID", "mine");
    b = boot_ok(NULL);
    expect(&b, 2, 4, 0, 2, "Open MPI", "mine");
}

static void test_ompi_errors(void **state)
{
    (void)state;
    set("OMPI_MCA_ess_base_jobid", "1234");
    set_ompi("5", "4", "0", "1");
    boot_fails("OMPI_COMM_WORLD_RANK=5 but OMPI_COMM_WORLD_SIZE=4: expected "
               "rank < size");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    boot_fails("OMPI_COMM_WORLD_RANK=5 but OMPI_COMM_WORLD_SIZE is unset: "
               "Open MPI sets both");
    unsetenv("OMPI_COMM_WORLD_RANK");
    set("OMPI_COMM_WORLD_SIZE", "4");
    boot_fails("OMPI_COMM_WORLD_SIZE=4 but OMPI_COMM_WORLD_RANK is unset: "
               "Open MPI sets both");
    set("OMPI_COMM_WORLD_RANK", "two");
    boot_fails("OMPI_COMM_WORLD_RANK='two': expected an integer 0..1048576");
    set("OMPI_COMM_WORLD_RANK", "-1");
    boot_fails("OMPI_COMM_WORLD_RANK='-1': expected an integer 0..1048576");
    set_ompi("1", "4", "3", "2");
    boot_fails("OMPI_COMM_WORLD_LOCAL_RANK=3 but OMPI_COMM_WORLD_LOCAL_SIZE=2: "
               "expected local rank < local size");
    set_ompi("1", "4", "1", "8");
    boot_fails("OMPI_COMM_WORLD_LOCAL_SIZE=8 but the job has 4 tasks: "
               "expected local size <= size");
    set_ompi("1", "4", "1", "2");
    unsetenv("OMPI_MCA_ess_base_jobid");
    boot_fails("4 tasks from Open MPI but no job id: neither "
               "OMPI_MCA_ess_base_jobid nor PMIX_NAMESPACE is set; set "
               "TUTTI_JOB_ID to one value on every task");
}

/* ---- MPICH/Hydra --------------------------------------------------------- */

static void test_hydra(void **state)
{
    (void)state;
    set_all((const char *const[]){"PMI_RANK", "1", "PMI_SIZE", "3",
        "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "3",
        "PMI_KVSNAME", "kvs_4711_0", NULL});
    tutti__bootstrap_t b = boot_ok(NULL);
    expect(&b, 1, 3, 1, 3, "MPICH/Hydra PMI", "pmi_kvs_4711_0");
    assert_string_equal(b.job_source, "PMI_KVSNAME");
    /* local size unknown */
    unsetenv("MPI_LOCALNRANKS");
    b = boot_ok(NULL);
    expect(&b, 1, 3, 1, -1, "MPICH/Hydra PMI", "pmi_kvs_4711_0");
    /* no name: TUTTI_JOB_ID is required, and said so */
    unsetenv("PMI_KVSNAME");
    boot_fails("3 tasks from MPICH/Hydra PMI (PMI_RANK=1 PMI_SIZE=3) but no "
               "job id: PMI_KVSNAME is unset and Hydra's own id is not in the "
               "environment; set TUTTI_JOB_ID to one value on every task "
               "(mpiexec -genv TUTTI_JOB_ID <id> ...)");
    set("TUTTI_JOB_ID", "hydra-run");
    b = boot_ok(NULL);
    expect(&b, 1, 3, 1, -1, "MPICH/Hydra PMI", "hydra-run");
    /* srun --mpi=pmi2: PMI_RANK with Slurm's step */
    unsetenv("TUTTI_JOB_ID");
    set("SLURM_JOB_ID", "900");
    set("SLURM_STEP_ID", "3");
    b = boot_ok(NULL);
    expect(&b, 1, 3, 1, -1, "MPICH/Hydra PMI", "slurm_900_3");
    /* alone, no job id is needed */
    unsetenv("SLURM_JOB_ID");
    set("PMI_RANK", "0");
    set("PMI_SIZE", "1");
    b = boot_ok(NULL);
    assert_int_equal(b.num_tasks, 1);
    assert_string_equal(b.job_source, "process id");
    /* rank without size */
    unsetenv("PMI_SIZE");
    boot_fails("PMI_RANK=0 but PMI_SIZE is unset: MPICH/Hydra PMI sets both");
}

/* ---- Slurm --------------------------------------------------------------- */

static void test_slurm(void **state)
{
    (void)state;
    set_all((const char *const[]){"SLURM_PROCID", "5", "SLURM_NTASKS", "8",
        "SLURM_LOCALID", "1", "SLURM_JOB_ID", "555", "SLURM_STEP_ID", "2",
        "SLURM_TASKS_PER_NODE", "4(x2)", NULL});
    tutti__bootstrap_t b = boot_ok(NULL);
    expect(&b, 5, 8, 1, 4, "Slurm", "slurm_555_2");
    assert_string_equal(b.job_source, "SLURM_JOB_ID/SLURM_STEP_ID");
    set("SLURM_NTASKS_PER_NODE", "2");
    b = boot_ok(NULL);
    expect(&b, 5, 8, 1, 2, "Slurm", "slurm_555_2");
    /* uneven nodes: local size not known */
    unsetenv("SLURM_NTASKS_PER_NODE");
    set("SLURM_TASKS_PER_NODE", "3,5");
    b = boot_ok(NULL);
    expect(&b, 5, 8, 1, -1, "Slurm", "slurm_555_2");
    set("SLURM_TASKS_PER_NODE", "4(x2");
    b = boot_ok(NULL);
    assert_int_equal(b.local_num_tasks, -1);
    set("SLURM_TASKS_PER_NODE", "4");
    b = boot_ok(NULL);
    assert_int_equal(b.local_num_tasks, 4);
    /* the older spelling of the step */
    unsetenv("SLURM_STEP_ID");
    set("SLURM_STEPID", "9");
    b = boot_ok(NULL);
    assert_string_equal(b.job_id, "slurm_555_9");
}

static void test_slurm_errors(void **state)
{
    (void)state;
    set("SLURM_PROCID", "0");
    set("SLURM_JOB_ID", "555");
    boot_fails("SLURM_PROCID=0 but SLURM_NTASKS is unset: Slurm sets both");
    set("SLURM_NTASKS", "4");
    set("SLURM_PROCID", "4");
    boot_fails("SLURM_PROCID=4 but SLURM_NTASKS=4: expected rank < size");
    set("SLURM_PROCID", "3");
    set("SLURM_NTASKS_PER_NODE", "many");
    boot_fails("SLURM_NTASKS_PER_NODE='many': expected an integer 0..1048576");
    unsetenv("SLURM_NTASKS_PER_NODE");
    unsetenv("SLURM_JOB_ID");
    boot_fails("4 tasks from Slurm (SLURM_PROCID=3) but no job id: "
               "SLURM_JOB_ID is unset; set TUTTI_JOB_ID to one value on "
               "every task");
}

/* Open MPI before Hydra before Slurm. */
static void test_launcher_precedence(void **state)
{
    (void)state;
    set_ompi("1", "2", "1", "2");
    set_all((const char *const[]){"OMPI_MCA_ess_base_jobid", "7",
        "PMI_RANK", "2", "PMI_SIZE", "3", "PMI_KVSNAME", "kvs",
        "SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "8", NULL});
    tutti__bootstrap_t b = boot_ok(NULL);
    expect(&b, 1, 2, 1, 2, "Open MPI", "ompi_7");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    b = boot_ok(NULL);
    expect(&b, 2, 3, -1, -1, "MPICH/Hydra PMI", "pmi_kvs");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    b = boot_ok(NULL);
    expect(&b, 3, 4, -1, -1, "Slurm", "slurm_8");
}

/* ---- job id names -------------------------------------------------------- */

static void test_job_names(void **state)
{
    char a[TUTTI_BOOTSTRAP_JOB_MAX + 1], b[TUTTI_BOOTSTRAP_JOB_MAX + 1];
    const char *long1 = "prterun-a-very-long-host-name.example.org-1234@1";
    const char *long2 = "prterun-a-very-long-host-name.example.org-1235@1";
    (void)state;
    tutti__bootstrap_job_name("x_", "a b/c:d", a);
    assert_string_equal(a, "x_a_b_c_d");
    /* exactly 40 characters: kept as is */
    tutti__bootstrap_job_name("", "0123456789012345678901234567890123456789",
                              a);
    assert_string_equal(a, "0123456789012345678901234567890123456789");
    /* longer: a prefix and a hash, distinct for distinct ids */
    tutti__bootstrap_job_name("ompi_", long1, a);
    tutti__bootstrap_job_name("ompi_", long2, b);
    assert_int_equal(strlen(a), TUTTI_BOOTSTRAP_JOB_MAX);
    assert_int_equal(strlen(b), TUTTI_BOOTSTRAP_JOB_MAX);
    assert_memory_equal(a, "ompi_prterun-a-very-lon_", 24);
    assert_string_not_equal(a, b);
    assert_int_equal(strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                               "OPQRSTUVWXYZ0123456789_-"), strlen(a));
    /* and the same on every task */
    tutti__bootstrap_job_name("ompi_", long1, b);
    assert_string_equal(a, b);
    /* through the environment */
    set_ompi("0", "2", "0", "2");
    set("PMIX_NAMESPACE", long1);
    tutti__bootstrap_t boot = boot_ok(NULL);
    assert_string_equal(boot.job_id, a);
}

/* ---- through tutti_context_create --------------------------------------- */

static tutti_status_t context_from_env(tutti_context_t **ctx_out)
{
    tutti_context_params_t p;
    tutti_context_params_init(&p);
    p.log_level = "off";
    return tutti_context_create(&p, ctx_out);
}

static void test_context(void **state)
{
    tutti_context_t *ctx = NULL;
    (void)state;
    /* one task of Open MPI: a context that needs nobody else */
    set_ompi("0", "1", "0", "1");
    set("OMPI_MCA_ess_base_jobid", "77");
    assert_int_equal(context_from_env(&ctx), TUTTI_OK);
    assert_int_equal(tutti_context_task(ctx), 0);
    assert_int_equal(tutti_context_num_tasks(ctx), 1);
    tutti_context_destroy(ctx);
    ctx = NULL;
    /* a bad set fails the creation with the same detail */
    set_ompi("5", "4", "0", "1");
    assert_int_equal(context_from_env(&ctx), TUTTI_ERR_CONFIG);
    assert_null(ctx);
    assert_string_equal(tutti_last_error(), "OMPI_COMM_WORLD_RANK=5 but "
                        "OMPI_COMM_WORLD_SIZE=4: expected rank < size");
}

/* ---- real launches ------------------------------------------------------- */

/* Each of @p n tasks printed its OK line, naming @p source and a job id
 * that starts with @p job, the same on every task. */
static void expect_ok_lines(const char *out, int n, const char *source,
                            const char *job)
{
    char want[256], first[64] = "";
    int lines = 0;
    for (const char *l = strstr(out, "launch_worker: "); l != NULL;
         l = strstr(l + 1, "launch_worker: "))
        lines++;
    for (int r = 0; r < n; r++) {
        char got[64] = "";
        snprintf(want, sizeof(want), "launch_worker: task %d of %d ", r, n);
        const char *line = strstr(out, want);
        if (line == NULL)
            fail_msg("no line for task %d in:\n%s", r, out);
        snprintf(want, sizeof(want), " from %s, job ", source);
        const char *from = strstr(line, want);
        const char *end = strchr(line, '\n');
        if (from == NULL || (end != NULL && from > end) ||
            sscanf(from + strlen(want), "%63[A-Za-z0-9_-]", got) != 1 ||
            strncmp(from + strlen(want) + strlen(got), ": OK\n", 5) != 0)
            fail_msg("task %d: expected '...%s%s...: OK' in:\n%s", r, want,
                     job, out);
        if (strncmp(got, job, strlen(job)) != 0)
            fail_msg("task %d: job %s, expected %s...", r, got, job);
        if (r == 0)
            snprintf(first, sizeof(first), "%s", got);
        assert_string_equal(got, first);
    }
    if (lines != n)
        fail_msg("%d launch_worker lines, expected %d:\n%s", lines, n, out);
}

static void test_mpirun(void **state)
{
    char out[16384], cmd[512];
    (void)state;
    test_require_ompi_mpirun("; ./build.sh installs openmpi-bin");
    /* TUTTI_* would win over Open MPI's variables: none may be set */
    snprintf(cmd, sizeof(cmd), "timeout 300 mpirun -n 4 --oversubscribe "
             "--bind-to none%s %s", test_mpirun_root_flag(), WORKER);
    test_run_ok(cmd, 1, out, sizeof(out));
    expect_ok_lines(out, 4, "Open MPI", "ompi_");
    for (int r = 0; r < 4; r++) {
        char want[64];
        snprintf(want, sizeof(want), "task %d of 4 (local %d of 4)", r, r);
        if (strstr(out, want) == NULL)
            fail_msg("no '%s' in:\n%s", want, out);
    }
}

/* Three tasks started here with @p vars (a shell fragment using $i, the
 * task) and nothing else of a launcher's. */
static void run_three(const char *vars, const char *source, const char *job)
{
    char cmd[768], out[8192];
    snprintf(cmd, sizeof(cmd), "for i in 0 1 2; do (%s timeout 120 %s; "
             "echo \"launch_worker: exit $i: $?\") & done; wait", vars,
             WORKER);
    test_run_ok(cmd, 1, out, sizeof(out));
    for (int r = 0; r < 3; r++) {
        char want[64];
        snprintf(want, sizeof(want), "launch_worker: exit %d: 0\n", r);
        if (strstr(out, want) == NULL)
            fail_msg("task %d did not exit 0:\n%s", r, out);
    }
    /* the exit lines are not task lines */
    char tasks_only[8192], *w = tasks_only;
    for (const char *l = out; *l != '\0';) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
        if (strncmp(l, "launch_worker: exit ", 20) != 0) {
            memcpy(w, l, len);
            w += len;
        }
        l += len;
    }
    *w = '\0';
    expect_ok_lines(tasks_only, 3, source, job);
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "tutti-%s-", job);
    assert_int_equal(test_shm_names_with(prefix), 0);
}

static void test_slurm_like(void **state)
{
    char vars[256], job[64];
    (void)state;
    snprintf(vars, sizeof(vars), "SLURM_PROCID=$i SLURM_NTASKS=3 "
             "SLURM_LOCALID=$i SLURM_JOB_ID=%ld SLURM_STEP_ID=7",
             (long)getpid());
    snprintf(job, sizeof(job), "slurm_%ld_7", (long)getpid());
    run_three(vars, "Slurm", job);
}

static void test_pmi_like(void **state)
{
    char vars[256], job[64];
    (void)state;
    snprintf(vars, sizeof(vars), "PMI_RANK=$i PMI_SIZE=3 PMI_KVSNAME=kvs_%ld_0 "
             "MPI_LOCALRANKID=$i", (long)getpid());
    snprintf(job, sizeof(job), "pmi_kvs_%ld_0", (long)getpid());
    run_three(vars, "MPICH/Hydra PMI", job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_single_task, clear_setup),
        cmocka_unit_test_setup(test_api_first, clear_setup),
        cmocka_unit_test_setup(test_tutti_before_launchers, clear_setup),
        cmocka_unit_test_setup(test_tutti_errors, clear_setup),
        cmocka_unit_test_setup(test_ompi, clear_setup),
        cmocka_unit_test_setup(test_ompi_errors, clear_setup),
        cmocka_unit_test_setup(test_hydra, clear_setup),
        cmocka_unit_test_setup(test_slurm, clear_setup),
        cmocka_unit_test_setup(test_slurm_errors, clear_setup),
        cmocka_unit_test_setup(test_launcher_precedence, clear_setup),
        cmocka_unit_test_setup(test_job_names, clear_setup),
        cmocka_unit_test_setup(test_context, clear_setup),
        cmocka_unit_test_setup(test_mpirun, clear_setup),
        cmocka_unit_test_setup(test_slurm_like, clear_setup),
        cmocka_unit_test_setup(test_pmi_like, clear_setup),
    };
    tutti__log_set_level(TUTTI_LOG_OFF);
    return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
