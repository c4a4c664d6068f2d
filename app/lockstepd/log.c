/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepd's log type, its level names and the "log.level" command.
 * The level applies to every lockstep log type (lockstep*), so the
 * libraries' messages follow the daemon's.
 */
#include <string.h>

#include <jansson.h>

#include <rte_log.h>

#include "lockstepd.h"
#include "ls_ctl.h"

RTE_LOG_REGISTER(lsd_logtype, lockstep.daemon, INFO);

static const char *const level_names[] = {
	[RTE_LOG_EMERG] = "emerg", [RTE_LOG_ALERT] = "alert", [RTE_LOG_CRIT] = "crit",
	[RTE_LOG_ERR] = "error", [RTE_LOG_WARNING] = "warning", [RTE_LOG_NOTICE] = "notice",
	[RTE_LOG_INFO] = "info", [RTE_LOG_DEBUG] = "debug",
};

int
lsd_log_level_from_name(const char *s)
{
	for (int i = (int)RTE_LOG_EMERG; i <= (int)RTE_LOG_DEBUG; i++)
		if (s != NULL && strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

/* Set every lockstep log type to lvl (a level lsd_log_level_from_name gave). */
void
lsd_log_set_level(int lvl)
{
	rte_log_set_level_pattern("lockstep*", (uint32_t)lvl);
	rte_log_set_level(lsd_logtype, (uint32_t)lvl);
}

static void
cmd_log_level(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	json_t *v = json_object_get(args, "level");
	int lvl;

	if (v != NULL) {
		lvl = lsd_log_level_from_name(json_string_value(v));
		if (lvl < 0) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
					   "args.level: expected one of emerg, alert, crit, error, "
					   "warning, notice, info, debug");
			return;
		}
		lsd_log_set_level(lvl);
	}
	lvl = rte_log_get_level(lsd_logtype);
	ls_ctl_reply_ok(req, json_pack("{s:s}", "level",
				       lvl >= (int)RTE_LOG_EMERG && lvl <= (int)RTE_LOG_DEBUG ?
				       level_names[lvl] : "unknown"));
}

void
lsd_log_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "log.level", "{[level]}", "get or set the log level",
			     "level", cmd_log_level, NULL);
}
