/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef TT_CLI_AGGREGATE_H
#define TT_CLI_AGGREGATE_H

/* tensor-trainer aggregate MODEL --broker URL --clients N --rounds R ...
 * (argv[0] is "aggregate"); the exit code. */
int tt_cli_aggregate (int argc, char **argv);

#endif
