/* allreduce_mpi.c — the baseline of scripts/bench/allreduce.lua: a plain
 * MPI_Allreduce (float32 sum, in place) loop, best of `reps` timings per
 * size, sizes in bytes from argv. Rank 0 prints "bytes seconds" lines.
 * MPI_THREAD=serialized starts MPI at ember's thread level
 * (MPI_THREAD_SERIALIZED, for its communication thread), where OpenMPI
 * takes its internal locks on every call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *level = getenv("MPI_THREAD");
    int provided;
    MPI_Init_thread(&argc, &argv, level && strcmp(level, "serialized") == 0 ? MPI_THREAD_SERIALIZED
                                                                            : MPI_THREAD_SINGLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    for (int a = 2; a < argc; a++) {
        long bytes = atol(argv[a]);
        int n = (int)(bytes / (long)sizeof(float));
        float *buf = calloc((size_t)n + 1, sizeof *buf);
        if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
        /* small sizes: repeat inside one timing so the clock's grain stays small */
        int inner = bytes < (1 << 20) ? 100 : 1;
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < inner; i++) MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = (MPI_Wtime() - t0) / inner;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (t < best) best = t;
        }
        if (rank == 0) printf("%ld %.9f\n", bytes, best);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
