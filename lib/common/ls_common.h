/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lockstep common definitions: IPv4/IPv6 addresses as one type, MAC helpers,
 * and small utilities shared by every library.
 *
 * Addresses are kept in network byte order in a 16-byte array so that one
 * code path serves both families (IPv4 uses the first 4 bytes). Nothing here
 * needs the EAL.
 */
#ifndef LS_COMMON_H
#define LS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_AF_INET  4 /**< ls_addr.family for IPv4 */
#define LS_AF_INET6 6 /**< ls_addr.family for IPv6 */

/** An IPv4 or IPv6 address, network byte order. */
struct ls_addr {
	uint8_t family;   /**< LS_AF_INET, LS_AF_INET6, or 0 when unset */
	uint8_t a[16];    /**< address bytes; IPv4 uses a[0..3] */
};

/** An address with a prefix length (an interface address). */
struct ls_prefix {
	struct ls_addr addr; /**< the address */
	uint8_t plen;        /**< prefix length in bits */
};

/** Longest text form of an ls_addr, including the NUL. */
#define LS_ADDR_STRLEN 46

/** A MAC address as 6 bytes. */
struct ls_mac {
	uint8_t b[6]; /**< address bytes, transmission order */
};

/** Length of a MAC in "aa:bb:cc:dd:ee:ff" form, including the NUL. */
#define LS_MAC_STRLEN 18

/**
 * Parse an IPv4 or IPv6 address (no prefix).
 * @return 0, or -EINVAL when the text is not an address.
 */
int ls_addr_parse(const char *s, struct ls_addr *out);

/**
 * Parse "addr/plen". A missing "/plen" means a host prefix (32 or 128).
 * @return 0, or -EINVAL (bad address or prefix length out of range).
 */
int ls_prefix_parse(const char *s, struct ls_prefix *out);

/** Format an address into buf (at least LS_ADDR_STRLEN). Returns buf. */
const char *ls_addr_fmt(const struct ls_addr *a, char *buf, size_t len);

/** True when two addresses are equal (family and bytes). */
/** Big-endian (network order) field of a frame, read and written bytewise:
 * any alignment, any host. */
static inline uint16_t
ls_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/** 24-bit big-endian field (RoCEv2 QP, PSN). */
static inline uint32_t
ls_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/** Write a big-endian 16-bit field. */
static inline void
ls_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/** Big-endian 32- and 64-bit fields (wire formats: STAMP, sync TLV, load headers). */
static inline uint32_t
ls_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
ls_get_be64(const uint8_t *p)
{
	return (uint64_t)ls_get_be32(p) << 32 | ls_get_be32(p + 4);
}

static inline void
ls_put_be32(uint8_t *p, uint32_t v)
{
	ls_put_be16(p, (uint16_t)(v >> 16));
	ls_put_be16(p + 2, (uint16_t)v);
}

static inline void
ls_put_be64(uint8_t *p, uint64_t v)
{
	ls_put_be32(p, (uint32_t)(v >> 32));
	ls_put_be32(p + 4, (uint32_t)v);
}

static inline bool
ls_addr_eq(const struct ls_addr *x, const struct ls_addr *y)
{
	size_t n = x->family == LS_AF_INET ? 4 : 16;

	return x->family == y->family && memcmp(x->a, y->a, n) == 0;
}

/**
 * True for an address a host can have: not unspecified, multicast or (IPv4)
 * the limited broadcast.
 */
bool ls_addr_is_unicast(const struct ls_addr *a);

/** True when addr lies inside prefix p (same family). */
bool ls_prefix_contains(const struct ls_prefix *p, const struct ls_addr *addr);

/**
 * True for an IPv4 source (host byte order) no packet may be answered from:
 * "this network" 0/8, loopback 127/8, multicast 224/4 and the reserved
 * 240/4 with the limited broadcast. A reply to one would go nowhere, to
 * ourselves, or to a group (an amplifier).
 */
static inline bool
ls_addr_v4_martian(uint32_t s)
{
	return (s >> 24) == 0 || (s >> 24) == 127 || (s >> 24) >= 224;
}

/**
 * IPv4 form of ls_prefix_bad_source, host byte order, for fast paths: s is
 * mine itself, or (prefixes shorter than /31, RFC 3021) the network or
 * directed-broadcast address of mine/plen.
 */
static inline bool
ls_prefix_bad_source_v4(uint32_t s, uint32_t mine, uint8_t plen)
{
	uint32_t host;

	if (s == mine)
		return true;
	if (plen >= 31)
		return false;
	host = (uint32_t)(0xffffffffULL >> plen);
	return (s & ~host) == (mine & ~host) && ((s & host) == 0 || (s & host) == host);
}

/**
 * True when src cannot be the source of a packet to an interface with
 * address and prefix p: it is p's own address, or p's IPv4 subnet's network
 * or directed-broadcast address (no such addresses in a /31 or /32). Answers
 * to such a source would go to ourselves or to the whole subnet. What no
 * host may send from at all (unspecified, multicast) is ls_addr_is_unicast.
 */
bool ls_prefix_bad_source(const struct ls_prefix *p, const struct ls_addr *src);

/**
 * Parse "aa:bb:cc:dd:ee:ff" (also accepts '-').
 * @return 0, or -EINVAL.
 */
int ls_mac_parse(const char *s, struct ls_mac *out);

/** Format a MAC into buf (at least LS_MAC_STRLEN). Returns buf. */
const char *ls_mac_fmt(const struct ls_mac *m, char *buf, size_t len);

/** Number of elements of a fixed array. */
#define LS_ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))

/** Nanoseconds per second. */
#define LS_NS_PER_S 1000000000ULL

#ifdef __cplusplus
}
#endif

#endif /* LS_COMMON_H */
