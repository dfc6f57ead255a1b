/* Bootstrap: task, count and job id from the API, tutti-run or a launcher. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job/bootstrap.h"
#include "base/log.h"

#define MAX_TASKS (1 << 20)

/* A launcher's variables.  It is present when @p rank (or, with
 * size_marks, @p size) is set; then rank and size must both be. */
typedef struct {
    const char *name;
    const char *vars;        /* for the log */
    const char *rank, *size;
    const char *local_rank;
    const char *local_size;  /* NULL: Slurm's rules (slurm_local_size) */
    int size_marks;
} launcher_t;

/* In precedence order. */
static const launcher_t launchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_*", "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", 1},
    {"MPICH/Hydra PMI", "PMI_RANK/PMI_SIZE", "PMI_RANK", "PMI_SIZE",
     "MPI_LOCALRANKID", "MPI_LOCALNRANKS", 1},
    /* SLURM_NTASKS alone is also set in an allocation's shell (salloc,
     * sbatch) where a program started without srun is a single task. */
    {"Slurm", "SLURM_PROCID/SLURM_NTASKS", "SLURM_PROCID", "SLURM_NTASKS",
     "SLURM_LOCALID", NULL, 0},
};

static const char *env_set(const char *name)
{
    const char *s = getenv(name);
    return s != NULL && *s != '\0' ? s : NULL;
}

/* Reads a non-negative integer environment variable; -1 if unset. */
static tutti_status_t env_int(const char *name, long max, int *value_out)
{
    const char *s = env_set(name);
    char *end;
    if (s == NULL) {
        *value_out = -1;
        return TUTTI_OK;
    }
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > max)
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "%s='%s': expected an integer 0..%ld", name, s,
                            max);
    *value_out = (int)v;
    return TUTTI_OK;
}

static const launcher_t *find_launcher(void)
{
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        const launcher_t *l = &launchers[i];
        if (env_set(l->rank) || (l->size_marks && env_set(l->size)))
            return l;
    }
    return NULL;
}

/* Rank and size of @p l, both set and rank < size. */
static tutti_status_t read_ranks(const launcher_t *l, int *rank_out,
                                 int *size_out)
{
    tutti_status_t st;
    int r = -1, s = -1;
    if ((st = env_int(l->rank, MAX_TASKS, &r)) != TUTTI_OK ||
        (st = env_int(l->size, MAX_TASKS, &s)) != TUTTI_OK)
        return st;
    if (r < 0 || s < 0)
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "%s=%s but %s is unset: %s sets both",
                            r < 0 ? l->size : l->rank,
                            env_set(r < 0 ? l->size : l->rank),
                            r < 0 ? l->rank : l->size, l->name);
    if (r >= s)
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "%s=%d but %s=%d: expected rank < size", l->rank,
                            r, l->size, s);
    *rank_out = r;
    *size_out = s;
    return TUTTI_OK;
}

/* Local rank and size (-1 where unset); inconsistent values are errors. */
static tutti_status_t read_local(const char *rank_var, const char *size_var,
                                 int num_tasks, int *rank_out, int *size_out)
{
    tutti_status_t st;
    int r = -1, s = -1;
    if ((st = env_int(rank_var, MAX_TASKS, &r)) != TUTTI_OK ||
        (st = env_int(size_var, MAX_TASKS, &s)) != TUTTI_OK)
        return st;
    if (r < 0)
        s = -1;
    if (s >= 0 && r >= s)
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "%s=%d but %s=%d: expected local rank < local "
                            "size", rank_var, r, size_var, s);
    if (s > num_tasks)
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "%s=%d but the job has %d tasks: expected local "
                            "size <= size", size_var, s, num_tasks);
    *rank_out = r;
    *size_out = s;
    return TUTTI_OK;
}

/* "N" or "N(xM)": N; anything else (nodes with different counts): -1. */
static int simple_tasks_per_node(const char *s)
{
    char *end;
    long n;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    n = strtol(s, &end, 10);
    if (errno != 0 || n < 1 || n > MAX_TASKS)
        return -1;
    if (*end == '(') {
        if (end[1] != 'x' || end[2] < '0' || end[2] > '9')
            return -1;
        strtol(end + 2, &end, 10);
        if (*end++ != ')')
            return -1;
    }
    return *end == '\0' ? (int)n : -1;
}

/* Slurm: SLURM_LOCALID; tasks per node from SLURM_NTASKS_PER_NODE, else
 * SLURM_TASKS_PER_NODE when every node has the same count. */
static tutti_status_t slurm_local(int num_tasks, int *rank_out,
                                  int *size_out)
{
    tutti_status_t st;
    int r = -1, s = -1;
    if ((st = env_int("SLURM_LOCALID", MAX_TASKS, &r)) != TUTTI_OK ||
        (st = env_int("SLURM_NTASKS_PER_NODE", MAX_TASKS, &s)) != TUTTI_OK)
        return st;
    if (s < 0)
        s = simple_tasks_per_node(env_set("SLURM_TASKS_PER_NODE"));
    /* Slurm may round these up; a count that cannot hold us says nothing. */
    if (r < 0 || s <= r || s > num_tasks)
        s = -1;
    *rank_out = r;
    *size_out = s;
    return TUTTI_OK;
}

static int job_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
}

void tutti__bootstrap_job_name(const char *prefix, const char *raw,
                               char *buf)
{
    const char *parts[2] = {prefix, raw};
    uint64_t hash = 14695981039346656037ull; /* FNV-1a */
    size_t n = 0;

    for (int i = 0; i < 2; i++)
        for (const char *c = parts[i]; *c != '\0'; c++, n++) {
            hash = (hash ^ (unsigned char)*c) * 1099511628211ull;
            if (n < TUTTI_BOOTSTRAP_JOB_MAX)
                buf[n] = job_char_ok(*c) ? *c : '_';
        }
    if (n <= TUTTI_BOOTSTRAP_JOB_MAX) {
        buf[n] = '\0';
        return;
    }
    /* prefix, '_' and 16 hex digits: exactly TUTTI_BOOTSTRAP_JOB_MAX */
    snprintf(buf + TUTTI_BOOTSTRAP_JOB_MAX - 17, 18, "_%016llx",
             (unsigned long long)hash);
}

/* Slurm's step: "slurm_<job>_<step>"; 0 if SLURM_JOB_ID is unset, or
 * @p need_step and no step is. */
static int slurm_job(char *buf, int need_step, const char **source_out)
{
    const char *job = env_set("SLURM_JOB_ID");
    const char *step = env_set("SLURM_STEP_ID");
    char raw[256];
    if (step == NULL)
        step = env_set("SLURM_STEPID");
    if (job == NULL || (need_step && step == NULL))
        return 0;
    snprintf(raw, sizeof(raw), "%s%s%s", job, step ? "_" : "",
             step ? step : "");
    tutti__bootstrap_job_name("slurm_", raw, buf);
    *source_out = step ? "SLURM_JOB_ID/SLURM_STEP_ID" : "SLURM_JOB_ID";
    return 1;
}

/* The job id launcher @p l gives, or an error saying what is missing. */
static tutti_status_t launcher_job(const launcher_t *l, int num_tasks,
                                   char *buf, const char **source_out)
{
    const char *s;
    if (l == &launchers[0]) {
        if ((s = env_set("OMPI_MCA_ess_base_jobid")) != NULL) {
            *source_out = "OMPI_MCA_ess_base_jobid";
        } else if ((s = env_set("PMIX_NAMESPACE")) != NULL) {
            *source_out = "PMIX_NAMESPACE";
        } else {
            return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                                "%d tasks from Open MPI but no job id: "
                                "neither OMPI_MCA_ess_base_jobid nor "
                                "PMIX_NAMESPACE is set; set TUTTI_JOB_ID to "
                                "one value on every task", num_tasks);
        }
        tutti__bootstrap_job_name("ompi_", s, buf);
        return TUTTI_OK;
    }
    if (l == &launchers[1]) {
        if ((s = env_set("PMI_KVSNAME")) != NULL) {
            tutti__bootstrap_job_name("pmi_", s, buf);
            *source_out = "PMI_KVSNAME";
            return TUTTI_OK;
        }
        /* srun --mpi=pmi2 sets PMI_RANK too; its step names the job */
        if (slurm_job(buf, 1, source_out))
            return TUTTI_OK;
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "%d tasks from MPICH/Hydra PMI (PMI_RANK=%s "
                            "PMI_SIZE=%s) but no job id: PMI_KVSNAME is unset "
                            "and Hydra's own id is not in the environment; "
                            "set TUTTI_JOB_ID to one value on every task "
                            "(mpiexec -genv TUTTI_JOB_ID <id> ...)", num_tasks,
                            env_set("PMI_RANK") ? env_set("PMI_RANK") : "",
                            env_set("PMI_SIZE") ? env_set("PMI_SIZE") : "");
    }
    if (slurm_job(buf, 0, source_out))
        return TUTTI_OK;
    return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                        "%d tasks from Slurm (SLURM_PROCID=%s) but no job id: "
                        "SLURM_JOB_ID is unset; set TUTTI_JOB_ID to one value "
                        "on every task", num_tasks, env_set("SLURM_PROCID"));
}

/* Task and count from the API, then TUTTI_RANK/TUTTI_SIZE, then @p l. */
static tutti_status_t learn_tasks(const tutti_context_params_t *p,
                                  const launcher_t *l, tutti__bootstrap_t *b)
{
    tutti_status_t st;
    b->task = p->task;
    b->num_tasks = p->num_tasks;
    if (b->task >= 0 && b->num_tasks >= 0) {
        b->source = "api";
        b->vars = "tutti_context_params_t";
    } else {
        if (b->task < 0 &&
            (st = env_int("TUTTI_RANK", MAX_TASKS, &b->task)) != TUTTI_OK)
            return st;
        if (b->num_tasks < 0 &&
            (st = env_int("TUTTI_SIZE", MAX_TASKS, &b->num_tasks)) != TUTTI_OK)
            return st;
        b->source = "tutti-run/TUTTI";
        b->vars = "TUTTI_RANK/TUTTI_SIZE";
    }
    if (b->task < 0 && b->num_tasks < 0 && l != NULL) {
        b->source = l->name;
        b->vars = l->vars;
        if ((st = read_ranks(l, &b->task, &b->num_tasks)) != TUTTI_OK)
            return st;
        if (l->local_size == NULL)
            return slurm_local(b->num_tasks, &b->local_task,
                               &b->local_num_tasks);
        return read_local(l->local_rank, l->local_size, b->num_tasks,
                          &b->local_task, &b->local_num_tasks);
    }
    if (b->task < 0 && b->num_tasks < 0) {
        b->task = 0;
        b->num_tasks = 1;
        b->source = "single task";
        b->vars = "no launcher variables";
    }
    if (b->task < 0 || b->num_tasks < 1 || b->task >= b->num_tasks) {
        /* From the API both were given: named as tutti.h names them. */
        if (strcmp(b->source, "api") == 0)
            return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                                "tutti_context_create: params task %d, "
                                "num_tasks %d: expected 0 <= task < "
                                "num_tasks", b->task, b->num_tasks);
        return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                            "task %d of %d tasks: expected 0 <= task < tasks "
                            "(TUTTI_RANK and TUTTI_SIZE go together)",
                            b->task, b->num_tasks);
    }
    if (strcmp(b->source, "tutti-run/TUTTI") == 0)
        return read_local("TUTTI_LOCAL_RANK", "TUTTI_LOCAL_SIZE",
                          b->num_tasks, &b->local_task, &b->local_num_tasks);
    return TUTTI_OK;
}

/* The job id: the API, then TUTTI_JOB_ID (both checked, not rewritten),
 * then the launcher; a single task without one gets its process id. */
static tutti_status_t learn_job_id(const tutti_context_params_t *p,
                                   const launcher_t *l, tutti__bootstrap_t *b)
{
    const char *job = p->job_id ? p->job_id : getenv("TUTTI_JOB_ID");
    if (job != NULL && *job != '\0') {
        size_t n = strlen(job);
        if (n > TUTTI_BOOTSTRAP_JOB_MAX ||
            strspn(job, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                        "OPQRSTUVWXYZ0123456789_-") != n)
            return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                                "job id '%s': expected up to 40 characters "
                                "of [A-Za-z0-9_-]", job);
        snprintf(b->job_id, sizeof(b->job_id), "%s", job);
        b->job_source = p->job_id ? "api" : "TUTTI_JOB_ID";
        return TUTTI_OK;
    }
    /* Alone, nobody needs to agree with us. */
    if (b->num_tasks == 1) {
        snprintf(b->job_id, sizeof(b->job_id), "p%ld", (long)getpid());
        b->job_source = "process id";
        return TUTTI_OK;
    }
    if (l != NULL)
        return launcher_job(l, b->num_tasks, b->job_id, &b->job_source);
    return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                        "%d tasks but no job id: set TUTTI_JOB_ID "
                        "(tutti-run does)", b->num_tasks);
}

const tutti_store_t *
tutti__bootstrap_store(const tutti_context_params_t *params)
{
    if (params == NULL ||
        params->size < offsetof(tutti_context_params_t, store) +
                           sizeof(params->store))
        return NULL;
    return params->store;
}

tutti_status_t tutti__bootstrap(const tutti_context_params_t *params,
                                tutti__bootstrap_t *out)
{
    tutti_context_params_t defaults;
    tutti__bootstrap_t b;
    const launcher_t *l = find_launcher();
    tutti_status_t st;

    if (params == NULL) {
        tutti_context_params_init(&defaults);
        params = &defaults;
    }
    memset(&b, 0, sizeof(b));
    b.local_task = -1;
    b.local_num_tasks = -1;
    if (tutti__bootstrap_store(params) != NULL) {
        /* The store meets the tasks (store.c): the API gives the task and
         * count; the job id, unless given, comes from task 0. */
        if (params->task < 0 || params->num_tasks < 1 ||
            params->task >= params->num_tasks)
            return tutti__error(TUTTI_ERR_CONFIG, "bootstrap",
                                "tutti_context_create: params store is set "
                                "with task %d, num_tasks %d: expected both, "
                                "0 <= task < num_tasks", params->task,
                                params->num_tasks);
        b.task = params->task;
        b.num_tasks = params->num_tasks;
        b.source = "api";
        b.vars = "tutti_context_params_t and its store";
        const char *job = params->job_id ? params->job_id
                                         : getenv("TUTTI_JOB_ID");
        if ((job != NULL && *job != '\0') &&
            (st = learn_job_id(params, NULL, &b)) != TUTTI_OK)
            return st;
        *out = b;
        return TUTTI_OK;
    }
    if ((st = learn_tasks(params, l, &b)) != TUTTI_OK)
        return st;
    if (b.num_tasks == 1 && b.local_num_tasks < 0) {
        b.local_task = 0;
        b.local_num_tasks = 1;
    }
    if ((st = learn_job_id(params, l, &b)) != TUTTI_OK)
        return st;
    *out = b;
    return TUTTI_OK;
}
