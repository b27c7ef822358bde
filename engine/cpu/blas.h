/* blas.h — OpenBLAS's entry points as engine/cpu/ calls them: a table of
 * pointers that blas.c fills with dlsym on first use (nothing links
 * OpenBLAS). gemm.c, conv.c and lapack.c are its only users. */
#ifndef EMBER_CPU_BLAS_H
#define EMBER_CPU_BLAS_H

#include "cpu.h"

/* for the enum types, and for the prototypes the table's pointers copy
 * (__typeof__ references no symbol) */
#include <cblas.h>

typedef size_t cpu_flen;    /* gfortran's hidden string length */

typedef struct cpu_blas_api {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(cblas_dgemm) *dgemm;
    __typeof__(openblas_set_num_threads) *set_num_threads;
    __typeof__(openblas_get_corename) *get_corename;
    /* LAPACK, the Fortran symbols OpenBLAS exports (lapacke is a separate
     * package in Debian): arguments by pointer, and one hidden length per
     * character argument, passed last */
    void (*sgetrf)(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
    void (*dgetrf)(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
    void (*sgesv)(const int *n, const int *nrhs, float *a, const int *lda, int *ipiv, float *b,
                  const int *ldb, int *info);
    void (*dgesv)(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
                  const int *ldb, int *info);
    void (*spotrf)(const char *uplo, const int *n, float *a, const int *lda, int *info, cpu_flen);
    void (*dpotrf)(const char *uplo, const int *n, double *a, const int *lda, int *info, cpu_flen);
    void (*sgeqrf)(const int *m, const int *n, float *a, const int *lda, float *tau, float *work,
                   const int *lwork, int *info);
    void (*dgeqrf)(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
                   const int *lwork, int *info);
    void (*sorgqr)(const int *m, const int *n, const int *k, float *a, const int *lda, const float *tau,
                   float *work, const int *lwork, int *info);
    void (*dorgqr)(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau,
                   double *work, const int *lwork, int *info);
    void (*sgesdd)(const char *jobz, const int *m, const int *n, float *a, const int *lda, float *s,
                   float *u, const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork,
                   int *iwork, int *info, cpu_flen);
    void (*dgesdd)(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
                   double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
                   int *iwork, int *info, cpu_flen);
    void (*ssyevd)(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w,
                   float *work, const int *lwork, int *iwork, const int *liwork, int *info, cpu_flen, cpu_flen);
    void (*dsyevd)(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                   double *work, const int *lwork, int *iwork, const int *liwork, int *info, cpu_flen, cpu_flen);
} cpu_blas_api;

/* OpenBLAS's entry points, the library opened on the first call (from any
 * thread; the others wait for it), single-threaded. NULL when it cannot be
 * opened or lacks a symbol, with the error "op: OpenBLAS (<file>) ...
 * <dlerror>"; every later call fails the same way. Call it on the calling
 * thread before splitting work over the pool, where an error can be
 * returned. */
const cpu_blas_api *cpu_blas_open(const char *op);

#endif
