/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Software clock synchronisation from probe timestamps, after Huygens
 * (Geng et al., NSDI 2018): coded probe pairs, a purity filter, an envelope
 * fit per pair of clocks, and a network-effect correction across the mesh.
 *
 * Vocabulary. "We" are node A, the peer is node B. A probe carries four
 * timestamps, each read on the clock of the node that took it:
 *   t1 A sends, t2 B receives, t3 B replies, t4 A receives.
 * The quantity estimated per peer is the edge offset
 *   o(t) = local_B(t) - local_A(t) = offset + drift * (t - t_ref)
 * with t on A's clock. Forward delays f = t2 - t1 = d_fwd + q + o(t1) and
 * reverse delays r = t4 - t3 = d_rev + q - o(t4) carry queueing q >= 0 only
 * upwards, so the lower envelope of f and the lower envelope of r bound
 * o(t) from both sides; the midline between them is o(t) when the
 * propagation floors are equal (d_fwd = d_rev). A constant asymmetry
 * d_fwd - d_rev shifts the midline by half of it and no two-way method can
 * see it; it is taken from configuration (asym_ns) and otherwise left in
 * the error budget.
 *
 * Pieces, in the order data flows through them:
 *  1. ls_sync_purity(): a coded pair (two probes sent a known spacing
 *     apart) is pure in a direction when its receive spacing equals its send
 *     spacing within a tolerance: neither packet met a queue the other did
 *     not. Only the first probe of a pure pair feeds the envelope.
 *  2. struct ls_sync_est: one per path to a peer, a window (default 2 s) of
 *     probes and their purity; ls_sync_est_fit() fits the envelope
 *     (ls_sync_envelope_fit) and gives offset, drift and a confidence
 *     figure. ls_sync_est_baselines() computes the NTP-style (min-RTT) and
 *     PTP-style (mean two-way) offsets from the same probes, for comparison.
 *  3. ls_sync_node_update(): the network effect. Every node states its
 *     clock relative to fleet time (theta, phi); an edge measured by A to B
 *     says theta_A = theta_B - o_AB. One update is one robust weighted
 *     average over neighbours' announced states (a Jacobi step of the
 *     weighted least-squares problem over the whole graph, with Huber
 *     weights that fall to zero for edges far from the consensus), so loop
 *     inconsistencies are spread out or, when an edge disagrees with the
 *     rest, cut. Repeated on every node it converges to the same solution a
 *     central solver would find; each node only needs its K neighbours.
 *  4. ls_sync_fleet_read(): local time to fleet time with an uncertainty
 *     interval that widens with time since the last good update.
 *
 * Pure C (libm), no EAL: unit tests drive it with synthetic clocks.
 * Estimators allocate their rings at init (control thread); nothing here
 * runs on the packet path.
 */
#ifndef LS_SYNC_H
#define LS_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One probe's timestamps, ns, each on the clock of the node taking it. */
struct ls_sync_probe {
	uint64_t t1; /**< A transmit */
	uint64_t t2; /**< B receive */
	uint64_t t3; /**< B transmit */
	uint64_t t4; /**< A receive */
};

#define LS_SYNC_PURE_FWD 1u /**< receive spacing at B = send spacing at A */
#define LS_SYNC_PURE_REV 2u /**< receive spacing at A = send spacing at B */

/**
 * Purity of a coded pair (a sent before b).
 * Forward pure: |(b.t2 - a.t2) - (b.t1 - a.t1)| <= tol_ns; reverse pure:
 * |(b.t4 - a.t4) - (b.t3 - a.t3)| <= tol_ns. A pair whose send spacing is
 * negative (b.t1 < a.t1 or b.t3 < a.t3) is pure in neither direction; zero
 * is allowed (both replies sent in one burst carry one T3).
 * @return a mask of LS_SYNC_PURE_FWD / LS_SYNC_PURE_REV.
 */
unsigned int ls_sync_purity(const struct ls_sync_probe *a, const struct ls_sync_probe *b,
			    uint64_t tol_ns);

/** A delay sample for the envelope fit: time (A's clock, ns, relative to
 * an origin chosen by the caller) and delay (ns). */
struct ls_sync_pt {
	double t;
	double d;
};

/** Estimator settings. */
struct ls_sync_est_conf {
	uint64_t window_ns;      /**< samples older than this are dropped, default 2 s */
	uint64_t purity_tol_ns;  /**< ls_sync_purity tolerance, default 200 */
	double max_drift;        /**< |drift| searched, default 500e-6 (500 ppm) */
	double asym_ns;          /**< calibrated d_fwd - d_rev, default 0 */
	double sigma_floor_ns;   /**< confidence never better than this, default 1 */
	double outlier_ns;       /**< an envelope support point lying more than this
				  *   below the envelope of the other points is an
				  *   outlier and dropped, default 2000 (<= 0: off) */
	uint32_t min_points;     /**< pure samples needed per direction, default 4 */
	uint32_t sigma_m;        /**< confidence from the m-th lowest residual, default 4 */
	double fixed_drift;      /**< NaN (default): fit the slope; else use this slope
				  *   and fit only the offset (a caller that knows the
				  *   drift better from a longer history: a window whose
				  *   forward and reverse floor samples do not overlap
				  *   in time tilts a free slope) */
};

/** Fill c with the defaults above. */
void ls_sync_est_conf_default(struct ls_sync_est_conf *c);

/** Pair intervals, per pure sample a side needs (min_points), that a
 *  window spans at least (ls_sync_est_window_for). */
#define LS_SYNC_WINDOW_PAIRS 3

/**
 * The window a path sending a pair every pair_ns needs: c->window_ns, or
 * LS_SYNC_WINDOW_PAIRS x c->min_points pair intervals when that is longer.
 *
 * Why: a fit fails the moment one side holds fewer than min_points pure
 * samples, and the path's estimate goes with it. At a pair a second the
 * default 2 s window holds two pairs: no window fitted after acquisition.
 * Three intervals a point leave room for the jitter (probe.jitter_pct,
 * +-10%: a pair fewer), lost replies and impure pairs: 3 x 4 intervals
 * hold about 11 pairs, so a side falls short only when 8 of them are lost
 * or impure, binomially 1 window a side in 800 with a quarter of the pairs
 * impure; twice min_points (7 pairs) would fall short in 1 in 14.
 * @param pair_ns  the path's steady pair interval, ns (0: c->window_ns)
 * @return the window, ns
 */
uint64_t ls_sync_est_window_for(const struct ls_sync_est_conf *c, uint64_t pair_ns);

/** Result of an envelope fit: the edge offset B - A as a line in A's time. */
struct ls_sync_fit {
	bool ok;                /**< false: too few samples (other fields unset) */
	uint64_t t_ref;         /**< A-clock time offset_ns refers to */
	double offset_ns;       /**< B - A at t_ref, asymmetry-corrected */
	double drift;           /**< d(B - A)/dt (1e-6 = 1 ppm) */
	double sigma_ns;        /**< confidence: spread of samples just above the
				 *   envelopes (see ls_sync_envelope_fit), >= floor */
	double drift_sigma;     /**< confidence of drift (sigma_ns / half the window span) */
	double half_gap_ns;     /**< half the gap between the envelopes at t_ref =
				 *   worst-case error for any unknown asymmetry */
	double band_ns;         /**< half the widest band any slope leaves between the
				 *   two clouds (= half_gap_ns unless the slope was
				 *   fixed): queueing both floors missed widens it,
				 *   a wrong slope does not narrow it */
	uint32_t n_fwd, n_rev;  /**< samples used */
	uint32_t n_outliers;    /**< samples dropped as outliers */
	bool has_sup;           /**< sup_fwd and sup_rev are set */
	struct ls_sync_pt sup_fwd; /**< the forward sample the lower envelope rests on
				    *   at the fitted slope (t relative to t_ref) */
	struct ls_sync_pt sup_rev; /**< the same for the reverse samples */
	double lag_ns;          /**< how far back the offset's weight lies: the
				 *   track filter's weighted age of its entries
				 *   (ls_sync_track_fit*), 0 when not from tracks */
};

/**
 * Fit the envelopes of forward samples (t = t1, d = t2 - t1) and reverse
 * samples (t = t4, d = t4 - t3), times relative to one origin.
 * Method: with a common slope b, the gap between the lower envelope of
 * f - b t and the upper envelope of -(r + b t) is
 *   G(b) = min_k (f_k - b t_k) + min_k (r_k + b t_k),
 * concave in b; b* maximises it (the widest empty band separating the two
 * clouds, i.e. the hard-margin separator Huygens' SVM finds) and the
 * offset at t = 0 is (min(f - b* t) - min(r + b* t)) / 2 - asym_ns / 2.
 * Support points that lie more than conf->outlier_ns below the envelope of
 * the remaining points are dropped and the fit repeated (leave-one-out;
 * also the lowest two or three of a side left out together, so that a few
 * bad points on one line cannot shield each other). To count, a point must
 * also lie more than twice as far below that envelope as the remaining
 * points' sigma_m-th lowest residual above it: under heavy queueing a few
 * good floor samples can sit microseconds below all others.
 * The slope is only well pinned when both sides have floor samples
 * spread over overlapping stretches of the window; if one side's floor
 * samples all lie before the other's, the widest band is tilted.
 * sigma_ns = max(floor, 0.5 * hypot(s_f, s_r)) where s_x is the residual of
 * the sigma_m-th lowest sample of that side above its envelope.
 * At most LS_SYNC_MAX_OUTLIERS points are dropped per fit, and never so
 * many that a side falls below conf->min_points. Non-finite samples are
 * ignored. The points need not be in time order.
 * @param out  offset_ns at t = 0, t_ref set to 0
 * @return 0, -ENODATA when a side has fewer than conf->min_points samples,
 *         or -ENOMEM (scratch space is allocated per call).
 */
/** Most samples ls_sync_envelope_fit() drops as outliers in one fit. */
#define LS_SYNC_MAX_OUTLIERS 8

int ls_sync_envelope_fit(const struct ls_sync_pt *fwd, uint32_t n_fwd,
			 const struct ls_sync_pt *rev, uint32_t n_rev,
			 const struct ls_sync_est_conf *conf, struct ls_sync_fit *out);

/** Most floor samples kept per direction per fit (ls_sync_est_floor_drift). */
#define LS_SYNC_FLOOR_VERTS 24
/** Fits whose floor samples are kept: 4 s at the default 250 ms sync step
 *  (8 s at the 500 ms the floor drift was tuned at, before 523a2bc). */
#define LS_SYNC_FLOOR_CHUNKS 16
/** How far back ls_sync_est_floor_drift() looks at most. The chunks bound
 *  it first at steps under 500 ms: it is 16 steps, 4 s at the default
 *  250 ms, and this cap only counts at slower steps. */
#define LS_SYNC_FLOOR_HORIZON_NS 8000000000ull

/**
 * Per-path estimator: a ring of recent probes with their purity, and the
 * floor chunks: per fit, the lower hull of each direction's pure samples
 * that arrived since the fit before, the only ones that can ever lie on the
 * lower hull of a longer span (the hull of a union is the hull of its
 * parts' hulls). Chunk j's vertices of direction s (0 forward, 1 reverse)
 * are floor_t / floor_d[(2 j + s) verts + i], i < floor_n[j][s].
 *
 * Why verts is sized and grown rather than fixed at LS_SYNC_FLOOR_VERTS: at
 * a pair a second a fit step holds one sample a direction or none, and 24
 * slots per chunk were 12 KiB a path, most of a Pingmesh path's memory.
 */
struct ls_sync_est {
	struct ls_sync_est_conf conf;
	uint32_t cap;                 /**< ring capacity (power of 2) */
	uint32_t head;                /**< next write */
	uint32_t n;                   /**< stored probes */
	struct ls_sync_probe *ring;   /**< cap probes */
	uint8_t *pure;                /**< cap purity masks (0 for second members) */
	uint64_t *floor_t;            /**< chunk vertices' time on A's clock (t1; t4) */
	double *floor_d;              /**< their delay (t2 - t1; t4 - t3) */
	uint32_t verts;               /**< vertices a chunk holds per direction: from
				       *   cap at init, grown when a fit's hull has
				       *   more, at most LS_SYNC_FLOOR_VERTS */
	uint8_t floor_n[LS_SYNC_FLOOR_CHUNKS][2]; /**< vertices held per chunk, direction */
	uint32_t chunk_head;          /**< next chunk written */
	uint32_t chunk_n;             /**< chunks held */
	uint64_t last_fit;            /**< now of the previous fit (0: none yet) */
	/* cumulative counters */
	uint64_t pairs;               /**< pairs offered */
	uint64_t fwd_kept, fwd_rejected;
	uint64_t rev_kept, rev_rejected;
	uint64_t outliers;            /**< dropped by the fit, summed over fits */
	uint64_t fits, fits_failed;
};

/**
 * Set up an estimator holding up to cap probes (rounded up to a power of 2;
 * at default window 2 s and a pair per path every 10 ms, 512 is enough).
 * The floor chunks start with cap / 32 vertices a direction (2 to
 * LS_SYNC_FLOOR_VERTS: a ring sized to twice a window's probes at the
 * acquisition rate, lockstepd's, spreads a quarter of its pairs over a
 * default window's 8 fit steps) and grow when a fit's hull needs more.
 * @return 0, -EINVAL, or -ENOMEM.
 */
int ls_sync_est_init(struct ls_sync_est *e, const struct ls_sync_est_conf *conf, uint32_t cap);

/** Release the rings. */
void ls_sync_est_free(struct ls_sync_est *e);

/**
 * Heap bytes the estimator holds (its ring, purity masks and floor chunks;
 * not the struct itself): what one path's clock sync costs besides it.
 */
size_t ls_sync_est_bytes(const struct ls_sync_est *e);

/** Forget all samples (counters kept): after a peer restart or clock step. */
void ls_sync_est_reset(struct ls_sync_est *e);

/**
 * A new window and ring capacity (cap rounded up to a power of 2) for a
 * path whose probe rate changed: the newest probes the ring held are kept
 * (as many as fit), and so are the floor chunks and counters.
 * @return 0, -EINVAL, or -ENOMEM (the estimator unchanged).
 */
int ls_sync_est_resize(struct ls_sync_est *e, uint64_t window_ns, uint32_t cap);

/**
 * Offer a coded pair: both probes are stored (both feed the baselines); the
 * first carries the pair's purity mask and feeds the envelope.
 */
void ls_sync_est_add_pair(struct ls_sync_est *e, const struct ls_sync_probe *a,
			  const struct ls_sync_probe *b);

/** Offer a probe that is not part of a pair (baselines only). */
void ls_sync_est_add_probe(struct ls_sync_est *e, const struct ls_sync_probe *p);

/**
 * Fit over the probes whose t1 lies in (now - window, now] (older ones are
 * dropped). t_ref = now; times are made relative to now before any
 * floating-point arithmetic, so absolute clock values of 1e18 ns and more
 * lose nothing. Also keeps the floor samples that came since the previous
 * fit (ls_sync_est_floor_drift).
 * @return 0, or -ENODATA / -ENOMEM (out->ok false).
 */
int ls_sync_est_fit(struct ls_sync_est *e, uint64_t now, struct ls_sync_fit *out);

/**
 * Drift from each direction's floor alone, over the last
 * LS_SYNC_FLOOR_HORIZON_NS of fits (each fit keeps the lower hull of the
 * pure samples that came since the one before it).
 *
 * Why: the envelope fit needs both directions' floors in one window to
 * place the offset, and its slope tilts when one side met its floor only
 * early and the other only late. Under heavy load on a leaf-spine path
 * (two busy links each way) a window seldom holds both, and windows'
 * slopes are far off for the first seconds, the track's slope through
 * them for a few more (docs/sync.md, "Lab notes behind the code": floor
 * drift). But every sample that met an empty queue lies on one line
 * per direction: forward delays on floor + o(t), reverse ones on floor -
 * o(t). So each direction's lower hull, where it spans the middle of the
 * horizon, has the drift as its slope (minus it, in reverse) as soon as
 * that direction met its floor once on each side of the middle, whatever
 * the other direction did. A hull edge resting on a queued sample is
 * tilted by its queueing over the edge's length. So each side's slope is
 * also taken with each quarter of the span left out: one that holds (it
 * joins floors, and others remain on its line) is the truth within how
 * far it moved, at least the wander's slope over the edge (wander_ns /
 * sqrt(its length)). The result is the two sides' mean; its uncertainty
 * the larger of half their difference (their queues are independent) and
 * the surer side's movement (how well that holds under simulated load:
 * docs/sync.md, "Lab notes behind the code": floor drift).
 * @param wander_ns  oscillator wander, ns per sqrt(s)
 * @param sigma      out: the uncertainty (NaN with the result)
 * @return the drift d(B - A)/d(A), or NaN when a direction has no hull
 *         edge over the middle, its floor samples span less than a
 *         quarter of the window, or neither side holds with some quarter
 *         left out.
 */
double ls_sync_est_floor_drift(const struct ls_sync_est *e, uint64_t now, double wander_ns,
			       double *sigma);

/** Baseline estimates of B - A from the same window's probes (pure or not). */
struct ls_sync_baseline {
	bool ok;                /**< at least one probe */
	uint32_t n;             /**< probes used */
	double ntp_offset_ns;   /**< ((t2-t1) - (t4-t3))/2 of the min-RTT probe */
	double ptp_offset_ns;   /**< mean of ((t2-t1) - (t4-t3))/2 */
	double min_rtt_ns;      /**< (t4-t1) - (t3-t2) of that probe */
};

/**
 * Compute baselines over (now - window, now].
 * @param drift  each probe's offset is moved to now along this drift
 *               (d(B - A)/dt): 0 gives the protocols as they stand; a
 *               caller comparing estimators at one instant passes the
 *               envelope's drift, so the baselines differ from it only in
 *               how they pick the offset.
 */
void ls_sync_est_baselines(const struct ls_sync_est *e, uint64_t now, double drift,
			   struct ls_sync_baseline *out);

/**
 * Combine fits of several paths to one peer into one edge estimate at
 * t_ref: each fit is moved to t_ref along its drift (its sigma growing in
 * quadrature by drift_sigma per ns moved), then the offsets are averaged
 * with weights 1 / sigma^2 and the drifts with weights 1 / drift_sigma^2.
 * The result's sigma is the larger of the weighted mean of the fits'
 * sigmas (the paths share links, so their errors are not independent and
 * 1 / sqrt(sum of weights) would claim too much) and the weighted spread
 * of their offsets; its drift_sigma likewise, from the drifts and their
 * weights; half_gap_ns is the smallest, counts are summed.
 * @return 0, or -ENODATA when no fit is ok.
 */
int ls_sync_combine(const struct ls_sync_fit *fits, unsigned int n, uint64_t t_ref,
		    struct ls_sync_fit *out);

/* ---- per-path history of window fits ---- */

/**
 * Windows kept per path: 30 s at the default 250 ms sync step. Used for the
 * drift (a slope through many windows' offsets is steadier than one 2 s
 * window's) and to carry a clean window's offset forward (below).
 */
#define LS_SYNC_TRACK_LEN 120

/**
 * The RTT floor tells each window how biased it can be. With the slope
 * right, a window's envelopes sit at F + o + qf and R - o + qr, where F, R
 * are the propagation floors and qf, qr >= 0 the least queueing its pure
 * samples met on each side; its half gap is (F + R + qf + qr) / 2 and its
 * offset is off by (qf - qr) / 2. So its half gap's excess over the least
 * half gap the path has shown, e = (qf + qr) / 2, bounds that error: a
 * window where one direction never reached its floor (a busy link, one
 * direction only) says so itself. The track weights windows by it and
 * carries the offset of a clean window forward along the drift, trusting
 * it less with age (drift uncertainty, oscillator wander), rather than
 * taking the newest window whatever it met.
 *
 * "The least half gap the path has shown" is the least since the track was
 * reset, not only among the windows held: under heavy load a path can go
 * longer than the track holds without a window that met both floors, and
 * measured against the best of the held ones, every held window would then
 * look clean while all of them were off by that much.
 */
struct ls_sync_track {
	struct ls_sync_track_win *w;     /**< cap windows, a ring (NULL: none yet) */
	uint32_t cap;                    /**< grows as windows come, to LS_SYNC_TRACK_LEN */
	uint32_t n;                      /**< entries held */
	uint32_t head;                   /**< next write */
	double floor;                    /**< least band since reset, held or not */
};

/**
 * One window as a track holds it, 40 bytes (it was 65: at a window every
 * 250 ms, 120 of them were 7.8 KiB a path, most of a Pingmesh path's
 * memory). Floats where what they round cannot matter:
 *  - gap and sig: ns, a float's 24 bits keep 6e-8 of them (0.001 ns of a
 *    20 us half gap); they weigh windows against each other.
 *  - the support samples' times, relative to t: whole ns within the window,
 *    exact up to 2^24 ns (16.7 ms), beyond that rounded by at most 64 ns in
 *    a 2 s window; a delay moves along the envelope's line by at most the
 *    drift (<= 500 ppm) times that: 0.03 ns.
 *  - their delays, less the offset rounded to whole ns (forward) or plus it
 *    (reverse). The raw delays carry the clocks' offset, up to seconds, and
 *    would not fit; what is left is a one-way delay (the path's floor and
 *    queueing), and whole ns, since the delays are differences of
 *    timestamps: exact below 16.7 ms, 1 part in 2^24 beyond.
 * With whole-ns offsets left out the round trip is exact, which matters
 * more than it seems: in the unit tests' synthetic data many samples lie
 * exactly on one line, and a 1e-9 ns difference breaks the ties the other
 * way (test_sync's track runs read 0.17 sigma for 0.08).
 * t and off stay 64-bit: absolute clock values, and offsets of up to
 * seconds that windows agree on to the nanosecond.
 */
struct ls_sync_track_win {
	uint64_t t;    /**< window's t_ref (our clock) */
	double off;    /**< its offset at t_ref */
	float gap;     /**< its band_ns (the widest half gap) */
	float sig;     /**< its sigma */
	float sf_t;    /**< forward support sample: time from t */
	float sf_d;    /**< ... its delay less round(off) (NaN: no support samples) */
	float sr_t;    /**< reverse support sample: time from t */
	float sr_d;    /**< ... its delay plus round(off) */
};

/** An empty track holding no memory (a zeroed one is the same). */
void ls_sync_track_init(struct ls_sync_track *k);

/** Release the windows' memory; k is empty (as after ls_sync_track_init). */
void ls_sync_track_free(struct ls_sync_track *k);

/** Forget every window (after a clock step or a peer restart); the memory
 * is kept for the windows to come. */
void ls_sync_track_reset(struct ls_sync_track *k);

/**
 * Append a window fit (ignored unless ok); the oldest falls out when full.
 * The ring grows as windows come (by half, at least 8 at a time), so a path
 * whose windows seldom fit (a pair a second: only while acquiring) holds
 * a few, and every track holds the same windows as one of
 * LS_SYNC_TRACK_LEN would. Control thread: it may allocate; if that fails
 * the oldest falls out early.
 */
void ls_sync_track_add(struct ls_sync_track *k, const struct ls_sync_fit *f);

/** Heap bytes the track holds (its windows; not the struct itself). */
size_t ls_sync_track_bytes(const struct ls_sync_track *k);

/**
 * Drift, two ways, and whichever is surer:
 *  - the weighted least-squares slope of the held offsets, each window
 *    weighted by 1 / (sigma^2 + e^2) (e its half-gap excess, above); its
 *    uncertainty the larger of its standard error and sum |c_j| u_j, c_j
 *    window j's coefficient in the slope and u_j = sqrt(sigma_j^2 + e_j^2),
 *    which holds however the windows' errors are correlated;
 *  - the envelope fit (ls_sync_envelope_fit, free slope, conf's outlier
 *    and sigma settings) of the windows' support samples: one forward and
 *    one reverse sample per window, the ones its envelopes rest on, over
 *    the whole span the track holds. This is the long-baseline slope:
 *    under heavy load each window's offset is tens of microseconds off in
 *    its own way and the least-squares slope through a few of them is
 *    ppm off, while any floor sample at either end of the span pins the
 *    envelope's slope to (its queueing) / (the span). Its uncertainty
 *    is at least the most it moves when any quarter of the span is left
 *    out: with each side's floors met in one stretch only, the widest band
 *    tilts, and only the stretches' interleaving pins it.
 * The least-squares windows are judged against the joined band of all
 * support samples at its slope when that is narrower than any window's by
 * more than wander can explain (ls_sync_track_fit).
 * @param min_span_ns  the windows must span at least this
 * @param conf         envelope settings (fixed_drift and asym_ns are ignored)
 * @param wander_ns    oscillator wander, ns per sqrt(s)
 * @param sigma        out: the chosen slope's uncertainty (NaN with the result)
 * @return the slope, or NaN with fewer than 6 windows or too short a span.
 */
double ls_sync_track_drift(const struct ls_sync_track *k, uint64_t min_span_ns,
			   const struct ls_sync_est_conf *conf, double wander_ns, double *sigma);

/**
 * Offset at now from the held windows, each moved to now along drift:
 * window j counts with uncertainty
 *   u_j^2 = sigma_j^2 + e_j^2 + (drift_sigma dt_j)^2 + wander_ns^2 dt_j / 1 s
 * (dt_j its age). With conf, one more entry: the envelope fit of all held
 * windows' support samples at drift (the joint entry), its lever the
 * distance of its support samples from now. When its half gap is narrower
 * than any window's by more than twice the wander over the held span, no
 * window met both floors, and that half gap, lowered to the least at
 * drift +- 3 drift_sigma, is the floor e_j is taken from.
 * The entries are combined by a Kalman filter in the order they measured
 * (an entry's time is its older support sample): each one measurement with
 * variance (sigma_j / 4)^2 + e_j^2 (ls_sync_track.c, set_entry), the
 * offset walking by wander_ns^2 per second
 * between them, and the drift's error over the result's weighted age
 * added at the end. An entry t old is off by the walk since then, which
 * every older entry shares: averaged as if independent, they made the
 * result lag the walk by seconds. With conf (it gives the window
 * length), a window's measurement variance grows with how many more
 * windows than four share its samples (window length over the windows'
 * spacing, over 4), so a second of probes weighs alike at any fit
 * interval. sigma_ns of the result is that variance's root,
 * but never below the least u (overlapping windows share samples, which
 * the filter counts as independent), half_gap_ns the half gap of the
 * entry with the least u.
 * @param wander_ns  the two clocks' relative walk (a random walk of the
 *                   offset), ns per sqrt(s) of age
 * @param conf       envelope settings for the joint entry (NULL: none)
 * @return 0, or -ENODATA when nothing is held.
 */
int ls_sync_track_fit(const struct ls_sync_track *k, uint64_t now, double drift,
		      double drift_sigma, double wander_ns, const struct ls_sync_est_conf *conf,
		      struct ls_sync_fit *out);

/** Scratch space for ls_sync_track_fit_many (about 7 KB per track). */
struct ls_sync_track_ws;

/**
 * Scratch space for fitting up to max_tracks tracks at once, made once by
 * the caller (the control thread) so that fitting allocates nothing.
 * @return the workspace, or NULL (out of memory, or max_tracks 0).
 */
struct ls_sync_track_ws *ls_sync_track_ws_create(unsigned int max_tracks);

/** Free a workspace (NULL is ignored). */
void ls_sync_track_ws_free(struct ls_sync_track_ws *ws);

/**
 * One offset at now from several tracks of one clock pair (the paths to
 * one peer): every track's entries, as ls_sync_track_fit makes them, each
 * track carried at its own drift[j] (drift_sigma[j]) and judged against its
 * own floor, go through one Kalman filter in the order they measured.
 *
 * Why not each path's track fit, averaged: every path sees the same two
 * clocks and so the same walk, while each path's probes carry their own
 * stamping noise. Filtered one path at a time, each track has only its own
 * windows to average that noise with and so averages over seconds, and the
 * walk since then is in every path's result alike; averaging the paths
 * afterwards cannot remove it. One filter over all of them gets the same
 * noise down from the paths' recent windows together and follows the walk
 * sooner.
 * The result's drift and drift_sigma are left 0: the caller combines the
 * paths' own drifts (ls_sync_combine). sigma_ns is the filter's, not below
 * the surest single entry's.
 * @param k           tracks (NULL or empty ones are skipped)
 * @param conf        envelope settings per track, for the joint entries
 * @param ws          from ls_sync_track_ws_create, for at least n tracks
 * @return 0, -ENODATA when no track holds anything, -EINVAL when ws is
 *         NULL or too small.
 */
int ls_sync_track_fit_many(const struct ls_sync_track *const *k, const double *drift,
			   const double *drift_sigma, unsigned int n, uint64_t now,
			   double wander_ns, const struct ls_sync_est_conf *const *conf,
			   struct ls_sync_track_ws *ws, struct ls_sync_fit *out);

/* ---- network effect ---- */

#define LS_SYNC_F_SYNCED   0x01u /**< theta/phi derive from the reference */
#define LS_SYNC_F_HOLDOVER 0x02u /**< no usable neighbour now: extrapolating */
#define LS_SYNC_F_REF      0x04u /**< this node is the reference */
#define LS_SYNC_F_EDGE     0x08u /**< edge_back_* hold the sender's own edge estimate */

/** Number of references a node remembers (see struct ls_sync_ref_seen). */
#define LS_SYNC_REFS_SEEN 4
/** A dead reference's ref_seq falling back this far means it restarted. */
#define LS_SYNC_SEQ_RESTART 128

/**
 * What a node remembers of one announced reference: the highest ref_seq
 * seen for it and when that last rose. A reference whose ref_seq stops
 * rising is dead even while neighbours keep repeating its last ref_seq;
 * remembering it keeps a node from re-electing it off a stale announcement.
 * A dead reference announced with a ref_seq more than LS_SYNC_SEQ_RESTART
 * below the remembered one has restarted (counting from 1 again) and is
 * alive. Private to ls_sync_node_update, not on the wire.
 */
struct ls_sync_ref_seen {
	uint32_t id;            /**< reference node id (0 = free slot) */
	uint32_t seq;           /**< highest ref_seq seen (serial arithmetic) */
	uint64_t at;            /**< local time it last rose (or was first seen) */
};

/** A node's clock relative to fleet time, as it announces it. */
struct ls_sync_state {
	uint32_t node_id;
	uint32_t ref_id;        /**< reference node (0 = none known) */
	uint32_t ref_seq;       /**< reference's update counter, passed on unchanged */
	uint16_t hops;          /**< distance to the reference in edges (UINT16_MAX unsynced) */
	uint8_t flags;          /**< LS_SYNC_F_* */
	uint64_t t0;            /**< this node's local time the values refer to */
	double theta_ns;        /**< local - fleet at t0 */
	double phi;             /**< d(local - fleet)/dt */
	double sigma_ns;        /**< 1-sigma uncertainty of theta at t0 (announced:
				 *   neighbours weight this node's offer by it) */
	double phi_sigma;       /**< 1-sigma uncertainty of phi */
	double bound_sigma_ns;  /**< what this node's own readings promise: sigma_ns,
				 *   or more when the estimate strayed from its
				 *   anchor (never on the wire) */
	double cluster_ns;      /**< this node's readings are theta_ns + cluster_ns:
				 *   its cluster's pooled estimate (ls_sync_node_update),
				 *   never on the wire */
	uint16_t cluster_n;     /**< cluster neighbours pooled into cluster_ns */
	double wander_obs_ns;   /**< this node's walk against fleet time as observed
				 *   (ls_sync_bound_observe), ns per sqrt(s), at 95%
				 *   confidence; NaN until observed; never on the wire */
	double lag_ns;          /**< how far back the node's estimate rests: its used
				 *   edges' lag_ns, weighted, doubled through a
				 *   neighbour that is not the reference; never on the wire */
	/**
	 * Only in a reflector's reply (LS_SYNC_F_EDGE): the reflector's own
	 * estimate of its edge toward the node that asked, local_asker -
	 * local_reflector at t0, and its drift. The asker averages it with
	 * its own estimate of the same edge (negated): a delay bias that
	 * makes every node see its peers' clocks a little ahead (an early
	 * transmit stamp) cancels between the two directions instead of
	 * adding up around loops.
	 */
	double edge_back_ns;
	double edge_back_drift;
	double edge_back_sigma;
	/* private to ls_sync_node_update (not on the wire) */
	uint64_t t_good;        /**< local time of the last update from neighbours */
	uint64_t ref_seq_at;    /**< local time ref_seq last increased */
	struct ls_sync_ref_seen refs[LS_SYNC_REFS_SEEN]; /**< references seen */
};

/** One neighbour as seen by the updating node. */
struct ls_sync_nbr {
	uint32_t id;
	bool has_edge;              /**< edge holds our fit of local_nbr - local_self */
	struct ls_sync_fit edge;    /**< t_ref on our clock */
	bool has_state;             /**< st holds the neighbour's latest announcement */
	struct ls_sync_state st;    /**< t0 on the neighbour's clock */
	uint64_t st_rx;             /**< our local time when st arrived */
};

/** How ls_sync_node_update used one neighbour (for `sync` reporting). */
struct ls_sync_nbr_use {
	bool used;              /**< took part in the average */
	double weight;          /**< final weight (0 when rejected) */
	double residual_ns;     /**< candidate theta - chosen theta */
	bool rejected;          /**< cut as inconsistent with the others */
	double scale_ns;        /**< the residual's scale: edge and neighbour sigma */
	double back_ns;         /**< two-sided edge minus our one-sided edge (0
				 *   when the neighbour did not hand its own back) */
	bool cluster;           /**< in our cluster: also pooled into our readings */
	double cluster_weight;  /**< its weight in that pool (0 when cut) */
};

/** Node settings. */
struct ls_sync_node_conf {
	uint32_t self_id;
	uint32_t reference_id;      /**< configured reference, 0 = elect the lowest id */
	double huber_k;             /**< full weight within k sigma, default 3 */
	double reject_k;            /**< zero weight beyond this many sigma, default 10 */
	uint64_t state_timeout_ns;  /**< neighbour announcements older than this are ignored, default 3 s */
	uint64_t ref_timeout_ns;    /**< a reference whose ref_seq stops rising for this long is dead, default 5 s */
	uint16_t max_hops;          /**< announcements this far from the reference are ignored, default 32 */
	double holdover_ppm;        /**< bound growth while not updated (on top of 3 phi_sigma), default 1 */
	double asym_bound_ns;       /**< uncalibrated asymmetry allowance added to the bound, default 0 */
	double sigma_floor_ns;      /**< default 1 */
	double cluster_ratio;       /**< a neighbour whose own sigma exceeds this many
				     *   times our edge's to it is in our cluster,
				     *   default 2; 0 = no clusters */
	double wander_ns;           /**< the walk the estimators assume (sync.wander_ns,
				     *   ns per sqrt(s)): the bound adds only the
				     *   observed walk beyond it (ls_sync_bound_observe),
				     *   default 0 */
};

/** Fill c with the defaults above (self_id and reference_id 0). */
void ls_sync_node_conf_default(struct ls_sync_node_conf *c);

/** Initial (unsynced) state of a node. */
void ls_sync_state_init(struct ls_sync_state *s, uint32_t node_id);

/**
 * One network-effect step for this node at local time now.
 *  - Reference: configured, else the lowest id among this node and the
 *    references announced by fresh neighbours (state_timeout_ns, a ref_seq
 *    that rose within ref_timeout_ns, hops < max_hops).
 *  - This node is the reference: sigma 0, hops 0, ref_seq + 1, flags
 *    SYNCED|REF, and its mapping fixed (theta moves along phi). Elected
 *    unsynced, theta = phi = 0 (fleet time is its clock); taking the role
 *    while SYNCED to another reference, it keeps its theta (plus
 *    cluster_ns) and phi, so fleet time carries on along the old
 *    reference's timeline instead of stepping to this node's clock.
 *    A cut-off node (SYNCED, not the reference, no fresh neighbour) does
 *    not take the role: it holds over.
 *  - Otherwise every fresh, SYNCED neighbour with the same reference and an
 *    edge gives a candidate theta_nbr(now') - o(now) and phi_nbr - drift,
 *    with sigma s = the edge's and the neighbour's together; weights 1/s^2,
 *    robust average (start at the reference's candidate if it is one, else
 *    the weighted median, then iteratively reweighted: weight 1 within
 *    huber_k s, huber_k s/|r| up to reject_k s, 0 beyond; if that rejects
 *    every candidate, plain Huber). hops = 1 + least hops used, ref_seq =
 *    highest used, sigma = the weighted mean of the used candidates' s
 *    (they all derive from the reference, so they are not independent).
 *  - Clusters: a neighbour whose own sigma is more than cluster_ratio times
 *    our edge's to it shares most of our error (a rack-mate behind the same
 *    loaded links). This node's readings, not its announcement, pool its
 *    theta with those neighbours' through its edges (the same robust
 *    average, from theta; sigma the weighted mean): cluster_ns = pooled -
 *    theta, cluster_n the members kept. Members then read about their mean
 *    and agree to within their edges.
 *  - No candidate: a node that was SYNCED keeps theta/phi (re-anchored at
 *    now along phi) with HOLDOVER set; one that never was stays unsynced.
 * @param s     in: previous state; out: new state (t0 = now)
 * @param use   optional, n entries: how each neighbour was used
 * @return number of neighbours used (0 in holdover/unsynced, 0 for the reference).
 */
int ls_sync_node_update(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs,
			unsigned int n, uint64_t now, struct ls_sync_state *s,
			struct ls_sync_nbr_use *use);

/** Fleet time of a local reading, with its uncertainty interval. */
struct ls_sync_reading {
	uint64_t fleet_ns;      /**< best estimate */
	uint64_t earliest_ns;   /**< fleet time is not earlier than this */
	uint64_t latest_ns;     /**< ... nor later than this */
	double half_ns;         /**< (latest - earliest) / 2 */
	uint8_t flags;          /**< the state's flags (0: unsynced, the interval is unbounded) */
};

/**
 * Map local time to fleet time: fleet = local - (theta + cluster_ns + phi (local - t0)).
 * Sigma is the larger of sigma_ns and bound_sigma_ns; el = |local - t_good|.
 * Half-width = 3 S(el) + asym_bound_ns + (3 phi_sigma + holdover_ppm 1e-6) el,
 * S(el)^2 = sigma^2 + x^2 (lag_ns + el) with x^2 = max(0, wander_obs_ns^2 -
 * c->wander_ns^2) per second: the walk observed beyond the one the
 * estimators budget for, over the estimate's lag and the reading's age.
 * S is taken along its tangent at el = 0 (S(0) + x^2 el / (2 S(0))), an
 * upper bound linear in el, so a reader extrapolating the half-width
 * linearly (ls_fleettime.h) never promises more.
 * Unsynced: fleet = local, earliest 0, latest UINT64_MAX.
 */
void ls_sync_fleet_read(const struct ls_sync_state *s, const struct ls_sync_node_conf *c,
			uint64_t local_ns, struct ls_sync_reading *out);

/* ---- the bound from what the clock is observed to do ---- */

/** Readings of its own estimate a node keeps (64 s at 250 ms). */
#define LS_SYNC_WOBS_LEN 256
/** Least spacing between two kept readings (network steps run faster). */
#define LS_SYNC_WOBS_SPACING_NS 200000000ull

/**
 * A node's own estimate over time (theta + cluster_ns at each step): what
 * its clock was observed to do against fleet time. Owned by the caller,
 * filled by ls_sync_bound_observe.
 */
struct ls_sync_wobs {
	uint32_t n;                    /**< readings held */
	uint32_t head;                 /**< next written */
	uint32_t ref_id;               /**< the reference they are against */
	uint64_t t[LS_SYNC_WOBS_LEN];  /**< local time of each */
	double x[LS_SYNC_WOBS_LEN];    /**< theta + cluster_ns then, ns */
	double s[LS_SYNC_WOBS_LEN];    /**< the sigma its readings claimed then, ns */
};

/** Forget every reading. */
void ls_sync_wobs_reset(struct ls_sync_wobs *w);

/** Keep one reading, x_ns with the sigma_ns it claimed (dropped if closer
 * than LS_SYNC_WOBS_SPACING_NS to the last). */
void ls_sync_wobs_add(struct ls_sync_wobs *w, uint64_t t, double x_ns, double sigma_ns);

/**
 * The walk of the readings held, ns per sqrt(s): from their second
 * differences over tau, d = x(t) - 2 x(t - tau) + x(t - 2 tau) (linear
 * drift cancels; x between readings is interpolated), w^2 = mean(d^2) /
 * (2 tau), the Allan variance of a random-walk phase, over the second
 * differences whose readings claimed no more than usual (s0^2 + 4 s1^2 +
 * s2^2 within 4 times its median): a start-up whose estimate moved by
 * microseconds while it said so does not count as walk for the minute
 * after. Estimation noise in the readings only adds to it. Taken at its upper 95% confidence limit
 * (chi-square with 1.5 (span - 2 tau) / tau degrees of freedom, the
 * overlapping estimator's), so a short history says less than a long one.
 * tau is clamped to a quarter of the span held, and no less than 250 ms;
 * when the span held is too short for the tau asked for, the result is
 * scaled up by sqrt(asked / used): a smoothed estimate shows only part of
 * the walk over less than its averaging time.
 * @return the walk, or NaN when the readings span less than 1 s.
 */
double ls_sync_wobs_wander(const struct ls_sync_wobs *w, double tau_ns);

/**
 * After a network step (ls_sync_node_update), derive the node's bound
 * from what its clock is observed to do rather than from an assumed
 * stability: keep its estimate's reading, set s->lag_ns from the used
 * edges (each edge's lag_ns, weighted as the step weighted it, twice that
 * through a neighbour that is not the reference: its own estimate lags as
 * much) and s->wander_obs_ns from ls_sync_wobs_wander at tau = that lag.
 * ls_sync_fleet_read widens the bound by the walk beyond c->wander_ns
 * over the lag and the reading's age. The reference, and a node not
 * synced, keep no readings (wander_obs_ns NaN); in holdover the readings
 * stop and the figures stay; a new reference starts the readings over.
 * @param use  what ls_sync_node_update reported (NULL: every neighbour
 *             with an edge counts alike)
 */
void ls_sync_bound_observe(struct ls_sync_wobs *w, const struct ls_sync_node_conf *c,
			   const struct ls_sync_nbr *nbrs, const struct ls_sync_nbr_use *use,
			   unsigned int n, uint64_t now, struct ls_sync_state *s);

/* ---- wire form of a state (TLV value, network byte order) ---- */

#define LS_SYNC_WIRE_LEN 64 /**< bytes of the encoded state */

/*
 * Versions. An asker (the sender of a pair's first probe) puts the newest
 * version it reads in the first byte of the otherwise zeroed value; the
 * reflector answers in the newest version it can encode that is not newer
 * than that, or leaves the value as it came (the asker then has no state
 * from it, as from a reflector without sync). 0 asks for version 2: the
 * askers before asks existed sent zeros and read 2. A release that changes
 * the layout raises LS_SYNC_WIRE_VERSION and keeps encoding the one before
 * (LS_SYNC_WIRE_VERSION_MIN) for a release, so a fleet upgrades one node at
 * a time and every pair keeps syncing in the older of its two versions
 * (docs/sync.md, "Upgrades").
 */
#define LS_SYNC_WIRE_VERSION 2     /**< the version this build reads and encodes */
#define LS_SYNC_WIRE_VERSION_MIN 2 /**< the oldest it can still answer in */

/** Write an ask into buf (LS_SYNC_WIRE_LEN bytes): zeros and our version. */
void ls_sync_wire_ask(uint8_t *buf);

/** Whether an ask for version `asked` can be answered (in
 * LS_SYNC_WIRE_VERSION when asked is newer or 0). */
static inline int
ls_sync_wire_answerable(uint8_t asked)
{
	return asked == 0 || asked >= LS_SYNC_WIRE_VERSION_MIN;
}

/** Whether a value came back filled: an ask (or zeros) left as sent is not. */
int ls_sync_wire_filled(const uint8_t *buf);

/**
 * Encode s into buf (LS_SYNC_WIRE_LEN bytes): version(1) flags(1) hops(2)
 * node_id(4) ref_id(4) ref_seq(4) t0(8) theta in 1/256 ns (int64)
 * phi in 1e-15 (int64) sigma in 1/256 ns (uint32) phi_sigma in 1e-12
 * (uint32) edge_back in 1/256 ns (int64) edge_back_drift in 1e-12 (int32)
 * edge_back_sigma in 1/256 ns (uint32).
 * Values saturate rather than wrap.
 */
void ls_sync_wire_encode(const struct ls_sync_state *s, uint8_t *buf);

/** Write the edge_back fields into an encoded state and set LS_SYNC_F_EDGE
 * (a reflector personalising its reply to one asker). */
void ls_sync_wire_put_edge(uint8_t *buf, double edge_ns, double drift, double sigma_ns);

/**
 * Decode; t_good and ref_seq_at are zeroed.
 * @return 0, or -EBADMSG for a version outside [LS_SYNC_WIRE_VERSION_MIN,
 *         LS_SYNC_WIRE_VERSION] or a value never filled (ls_sync_wire_filled).
 */
int ls_sync_wire_decode(const uint8_t *buf, struct ls_sync_state *s);

#ifdef __cplusplus
}
#endif

#endif /* LS_SYNC_H */
