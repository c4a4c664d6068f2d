/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process-wide state, struct lsd_global (lockstepd.h): filled at
 * start-up by main.c and port.c, read by every room. It is defined here,
 * below all of them, so that reading it makes no room depend on main.c.
 */
#include "lockstepd.h"

struct lsd_global lsd;
