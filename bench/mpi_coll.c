/*
 * The peers' side of bench/compare: one MPI collective (float32) over a
 * sweep of sizes, timed as tutti-perf times it (warm-up, a barrier, the
 * mean over the timed iterations on each rank, the slowest rank), with
 * tutti-perf's sizes (nccl-tests': for allgather, reduce_scatter and
 * alltoall the whole n x count) and columns, so one parser reads both.
 *
 *   mpirun -n N mpi_coll COLL MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
 *   COLL: allreduce broadcast allgather reduce_scatter alltoall
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, BROADCAST, ALLGATHER, REDUCE_SCATTER, ALLTOALL };

static const char *const names[] = {"allreduce", "broadcast", "allgather",
                                    "reduce_scatter", "alltoall"};

/* One call of @p coll on @p count floats per rank (per block where the
 * collective has blocks). */
static void run_once(int coll, float *in, float *out, int count, int n)
{
    switch (coll) {
    case ALLREDUCE:
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BROADCAST:
        MPI_Bcast(out, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT,
                      MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, MPI_SUM,
                                 MPI_COMM_WORLD);
        break;
    default:
        MPI_Alltoall(in, count, MPI_FLOAT, out, count, MPI_FLOAT,
                     MPI_COMM_WORLD);
        (void)n;
        break;
    }
}

int main(int argc, char **argv)
{
    int rank, n, coll = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int c = 0; argc > 1 && c < 5; c++)
        if (strcmp(argv[1], names[c]) == 0)
            coll = c;
    if (argc != 7 || coll < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_coll allreduce|broadcast|allgather|"
                    "reduce_scatter|alltoall MIN_BYTES MAX_BYTES FACTOR "
                    "ITERS WARMUP\n");
        MPI_Finalize();
        return 2;
    }
    double min = atof(argv[2]), max = atof(argv[3]), factor = atof(argv[4]);
    int iters = atoi(argv[5]), warmup = atoi(argv[6]);
    int blocks = coll == ALLGATHER || coll == REDUCE_SCATTER ||
                         coll == ALLTOALL ? n : 1;
    double busf = coll == ALLREDUCE   ? 2.0 * (n - 1) / n
                  : coll == BROADCAST ? 1.0
                                      : (double)(n - 1) / n;
    /* Input and output each hold the largest call's n blocks. */
    size_t cap = (size_t)max / sizeof(float) + (size_t)n;
    float *in = malloc(cap * sizeof(float));
    float *out = malloc(cap * sizeof(float));
    if (in == NULL || out == NULL || factor <= 1 || iters < 1) {
        fprintf(stderr, "mpi_coll: rank %d: bad arguments or no memory\n",
                rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < cap; i++) {
        in[i] = (float)((rank * 3 + (int)(i % 7)) % 5 + 1);
        out[i] = 0;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    const char *impl = strstr(lib, "Open MPI") ? "OpenMPI"
                       : strstr(lib, "MPICH")  ? "MPICH"
                                               : "MPI";
    if (rank == 0)
        printf("# mpi_coll: %s, %d ranks, float32, %d iterations (+%d "
               "warm-up), %s\n", names[coll], n, iters, warmup, impl);
    for (double sz = min; sz <= max; sz = sz > 0 ? sz * factor : 1) {
        int count = (int)((size_t)sz / sizeof(float) / (size_t)blocks);
        size_t bytes = (size_t)count * sizeof(float) * (size_t)blocks;
        for (int i = 0; i < warmup; i++)
            run_once(coll, in, out, count, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            run_once(coll, in, out, count, n);
        t = (MPI_Wtime() - t) * 1e6 / iters;
        double tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double algbw = tmax > 0 ? (double)bytes / (tmax * 1e3) : 0;
            printf("%12zu %12d %9s %6s %5d %11.2f %11.3f %11.3f %7s  %s  "
                   "%s\n", bytes, count, "float32",
                   coll == ALLREDUCE || coll == REDUCE_SCATTER ? "sum"
                                                               : "none",
                   coll == BROADCAST ? 0 : -1, tmax, algbw, algbw * busf,
                   "-", impl, names[coll]);
            fflush(stdout);
        }
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
