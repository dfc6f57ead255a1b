/*
 * Bootstrap: this process's task index, the number of tasks and the job id,
 * learned from whichever launcher started it.
 *
 * Precedence for task and count: the API (tutti_context_params_t task and
 * num_tasks) > TUTTI_RANK/TUTTI_SIZE (tutti-run, or set by hand) > Open MPI
 * (OMPI_COMM_WORLD_*) > MPICH/Hydra (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
 * MPI_LOCALNRANKS) > Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) > a
 * single task.  The job id names shared segments, so every task of a job
 * derives the same one: the API > TUTTI_JOB_ID > the launcher found in the
 * environment, sanitized to [A-Za-z0-9_-] and at most 40 characters.
 */
#ifndef TUTTI_CORE_BOOTSTRAP_H
#define TUTTI_CORE_BOOTSTRAP_H

#include <stddef.h>

#include <tutti/tutti.h>

/* Longest job id, in characters (tutti-run's limit too). */
#define TUTTI_BOOTSTRAP_JOB_MAX 40

typedef struct {
    int task, num_tasks;
    int local_task;          /* rank on this host, or -1: not known */
    int local_num_tasks;     /* tasks on this host, or -1: not known */
    char job_id[TUTTI_BOOTSTRAP_JOB_MAX + 1];
    const char *source;      /* "api", "tutti-run/TUTTI", "Open MPI",
                                "MPICH/Hydra PMI", "Slurm", "single task" */
    const char *vars;        /* what task and count were read from */
    const char *job_source;  /* what the job id was read from */
} tutti__bootstrap_t;

/**
 * Learn task, count, local rank and size and job id for @p params (NULL:
 * everything from the environment).  Static strings in @p out.  On an
 * error (a partial or inconsistent set of variables, a value that is not a
 * number, no job id for a job of several tasks) the detail names the
 * variables and their values, and @p out is left untouched.
 */
tutti_status_t tutti__bootstrap(const tutti_context_params_t *params,
                                tutti__bootstrap_t *out);

/** @p params' store where its size has the field and it is set, else
 *  NULL.  With one, tutti__bootstrap() takes task and count from @p params
 *  and leaves the job id empty unless given (tutti__store_meet fills it). */
const tutti_store_t *
tutti__bootstrap_store(const tutti_context_params_t *params);

/**
 * Writes @p prefix followed by @p raw into @p buf (at least
 * TUTTI_BOOTSTRAP_JOB_MAX + 1 bytes) with every character outside
 * [A-Za-z0-9_-] replaced by '_'.  Longer than TUTTI_BOOTSTRAP_JOB_MAX, it
 * keeps a prefix and appends a hash of the whole raw text, so distinct long
 * ids stay distinct.
 */
void tutti__bootstrap_job_name(const char *prefix, const char *raw,
                               char *buf);

#endif
