/*
 * core_int.h: helpers shared inside src/core (cluster.c, place.c, fgd.c);
 * not part of the public contract.
 */
#ifndef DROVER_CORE_INT_H
#define DROVER_CORE_INT_H

#include "drover/model.h"

/* Applies one task to its node (sign +1) or takes it back (-1), keeping
 * every aggregate exact. */
void drv__task_apply(struct drv_cluster *c, const struct drv_task_place *t, int sign);

#endif
