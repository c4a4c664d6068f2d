/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: the listening socket's file. A stale one left by a crashed
 * daemon is removed, a live one is never taken over, and the new one
 * appears at its path only once it listens.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ls_ctl_priv.h"

/*
 * Is something already at @path? A socket nobody answers on is left over
 * from a crashed daemon and is removed; a live one means another daemon
 * owns the path (EADDRINUSE). Anything that is not a socket is left alone
 * (EEXIST): we never delete a file we do not understand.
 */
int
ls_ctl_sock_clear_stale(const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, rc, err;

	if (lstat(sun->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;

	/* Non-blocking so a live server with a full backlog (EAGAIN)
	 * cannot stall the probe; that still counts as alive. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	err = errno;
	close(fd);
	if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
		return -EADDRINUSE;
	if (err == ECONNREFUSED) {
		if (unlink(sun->sun_path) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (err == ENOENT)
		return 0;
	return -err;
}

/*
 * Bind and listen under a temporary name next to the path, then rename() it
 * into place: the path appears already listening, so a client that waits
 * for the file (`[ -S sock ]`) and connects at once is never refused, as it
 * was between bind() and listen() on a loaded machine. Paths too long for
 * the suffix bind in place. bind() creates the file with 0777 & ~umask, and
 * fchmod() on a socket fd does not reach the file, so: bind under a umask
 * that cannot grant more than @mode, then chmod() to exactly @mode; the
 * socket is never more open than asked. 0 or an errno.
 */
int
ls_ctl_sock_listen(struct ls_ctl *ctl, const struct sockaddr_un *sun, mode_t mode)
{
	struct sockaddr_un tmp = *sun;
	struct stat st;
	mode_t old_umask;
	bool renamed;
	int rc, err;

	renamed = (size_t)snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.new",
				   sun->sun_path) < sizeof(tmp.sun_path);
	if (!renamed)
		tmp = *sun;
	else
		unlink(tmp.sun_path);  /* a start that died between bind and rename */
	old_umask = umask(~mode & 0777);
	rc = bind(ctl->listen_fd, (const struct sockaddr *)&tmp, sizeof(tmp));
	err = errno;
	umask(old_umask);
	if (rc < 0)
		return err;
	if (chmod(tmp.sun_path, mode) < 0 || listen(ctl->listen_fd, LS_CTL_BACKLOG) < 0 ||
	    (renamed && rename(tmp.sun_path, sun->sun_path) < 0)) {
		err = errno;
		unlink(tmp.sun_path);
		return err;
	}
	if (lstat(sun->sun_path, &st) < 0) {
		err = errno;
		unlink(sun->sun_path);
		return err;
	}
	ctl->dev = st.st_dev;
	ctl->ino = st.st_ino;
	return 0;
}
