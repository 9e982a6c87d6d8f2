/*
 * Pasco: asynchronous parameter-server training in C, in the style of
 * TensorFlow's ParameterServerStrategy + ClusterCoordinator.
 *
 * One program serves every role: the chief runs your coordinator code,
 * workers run your registered step functions, ps tasks hold the variables.
 *
 *     #include <pasco.h>
 *
 *     PASCO_FUNCTION(add_one)         // runs on a worker
 *     {
 *             pasco_variable *v;
 *             pasco_tensor   *one;
 *             pasco_call_variable(call, 0, &v);
 *             pasco_tensor_scalar(&one, PASCO_F32, 1.0);
 *             int rv = pasco_variable_assign_add(v, one);   // on the ps
 *             pasco_call_return(call, pasco_value_tensor(one));
 *             return rv;
 *     }
 *
 *     static int chief(const pasco_cluster *cluster, int argc, char **argv)
 *     {
 *             pasco_strategy *s; pasco_coordinator *c; pasco_variable *v;
 *             pasco_tensor *zero;
 *             pasco_strategy_create(&s, cluster, NULL);
 *             pasco_tensor_scalar(&zero, PASCO_F32, 0.0);
 *             pasco_variable_create(&v, s, "counter", zero);  // on ps 0
 *             pasco_coordinator_create(&c, s, NULL);
 *             pasco_arg arg = pasco_arg_variable(v);
 *             for (int i = 0; i < 10; i++)
 *                     pasco_schedule(c, "add_one", &arg, 1, NULL);
 *             return pasco_join(c);    // counter is now 10
 *     }
 *
 *     int main(int argc, char **argv) { return pasco_main(argc, argv, chief);
 * }
 *
 * Run it as a local cluster:  pasco launch --ps 1 --workers 2 -- ./prog
 * (Error checks and frees are left out above; see examples/.)
 */
#ifndef PASCO_H
#define PASCO_H

#include "pasco/checkpoint.h"
#include "pasco/cluster.h"
#include "pasco/constraint.h"
#include "pasco/coordinator.h"
#include "pasco/dataset.h"
#include "pasco/example.h"
#include "pasco/error.h"
#include "pasco/evaluator.h"
#include "pasco/fit.h"
#include "pasco/function.h"
#include "pasco/graph.h"
#include "pasco/hash.h"
#include "pasco/initializer.h"
#include "pasco/layers.h"
#include "pasco/model.h"
#include "pasco/metrics.h"
#include "pasco/ops.h"
#include "pasco/optimizer.h"
#include "pasco/partitioner.h"
#include "pasco/server.h"
#include "pasco/summary.h"
#include "pasco/tape.h"
#include "pasco/tfrecord.h"
#include "pasco/tensor.h"
#include "pasco/value.h"
#include "pasco/variable.h"
#include "pasco/version.h"

#endif
