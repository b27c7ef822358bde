/*
 * ag_region.h — what activation checkpointing (ember.utils.checkpoint) asks
 * of the tape: where a region of recorded ops begins, and which tensors that
 * require grad the graph recorded in the region reads from outside it.
 */
#ifndef EMBER_AG_REGION_H
#define EMBER_AG_REGION_H

#include "ember.h"

/* The creation number the next autograd node will get: nodes numbered at or
 * above a value read before a region are the region's. */
uint64_t em_ag_clock(void);

/* Walks the graph of outs (those that require grad) through the nodes
 * recorded since `since` and returns, in *leaves (a malloc'ed array of new
 * references, *nleaves long, in the order first met), the leaves that
 * require grad it reaches, other than the tensors of `known` (the region's
 * arguments). A node recorded before `since` that is not the grad_fn of a
 * known tensor is a tensor computed outside the region and captured, which
 * the region cannot hand a gradient to: an error naming op. */
int em_ag_region_leaves(const char *op, em_tensor *const *outs, int nout, uint64_t since,
                        em_tensor *const *known, int nknown, em_tensor ***leaves, int *nleaves);

#endif
