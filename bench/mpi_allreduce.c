/*
 * Reference timer for a peer library: MPI_Allreduce (float32 sum) with the
 * same method as tutti-perf (warm-up, barrier, mean over the timed
 * iterations, slowest rank).  Build: mpicc -O2 -o mpi_allreduce
 * mpi_allreduce.c; run: mpirun -n N ./mpi_allreduce BYTES [ITERS WARMUP].
 * Prints "bytes time_us busbw_GBps".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, iters = 20, warmup = 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce BYTES [ITERS WARMUP]\n");
        MPI_Finalize();
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    if (argc > 3) {
        iters = atoi(argv[2]);
        warmup = atoi(argv[3]);
    }
    size_t count = bytes / sizeof(float);
    float *in = malloc(count * sizeof(float) + 64);
    float *out = malloc(count * sizeof(float) + 64);
    for (size_t i = 0; i < count; i++)
        in[i] = (float)((rank * 3 + i) % 5 + 1);
    memset(out, 0, count * sizeof(float));
    for (int i = 0; i < warmup; i++)
        MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t = (MPI_Wtime() - t) * 1e6 / iters;
    double tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double algbw = tmax > 0 ? (double)(count * 4) / (tmax * 1e3) : 0;
        printf("%zu %.2f %.3f\n", count * 4, tmax,
               algbw * 2.0 * (size - 1) / size);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
