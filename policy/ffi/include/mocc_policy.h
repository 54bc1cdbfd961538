/*
 * C ABI of mocc-policy: run an exported mocc policy (policy.json + policy.safetensors) inside a
 * sender, without libtorch. Build: cargo build --release -p mocc-policy-ffi, then link
 * target/release/libmocc_policy_ffi.a (or .so).
 *
 * The simplest integration feeds packet events; the flow cuts monitor intervals (MIs) exactly
 * as the simulator the policy was trained in does, and every call returns the rate to pace at:
 *
 *   char err[256];
 *   double w[3] = {0.6, 0.3, 0.1};
 *   MoccFlow *f = mocc_flow_new("checkpoints/mocc-omega36", w, 100.0, err, sizeof err);
 *   if (!f) { fprintf(stderr, "%s\n", err); return 1; }
 *   double rate = mocc_flow_start(f, now(), handshake_rtt / 2);
 *   ... a packet leaves (pass its scheduled departure):   rate = mocc_flow_on_sent(f, t);
 *   ... a packet is acknowledged:                         rate = mocc_flow_on_acked(f, t, rtt);
 *   ... packets are found lost:                           rate = mocc_flow_on_lost(f, t, n);
 *   mocc_flow_free(f);
 *
 * An MI ends with the first packet event at or after its nominal end, and that event counts in
 * it; a new rate applies from the send after the one already scheduled. Times are seconds on
 * any monotonic clock (the same one for every call).
 *
 * A sender that keeps its own MIs uses a controller and hands it each finished MI instead
 * (mocc_controller_*); it must cut MIs by the rule above, with the times the struct below
 * describes, and size them with mocc_controller_mi_duration_s.
 *
 * Rates are packets of 1500 bytes per second; times are seconds.
 */
#ifndef MOCC_POLICY_H
#define MOCC_POLICY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a sender knows about one finished monitor interval. The four times are the MI's own
 * boundaries, as the simulator sets them: send_start_s = recv_start_s = the MI's start,
 * send_end_s = recv_end_s = its end (not the first and last packet's times). */
typedef struct MoccMonitorInterval {
    double bytes_sent;
    double bytes_acked;
    double bytes_lost;
    double send_start_s;
    double send_end_s;
    double recv_start_s;
    double recv_end_s;
    uint64_t rtt_count;             /* RTT samples of the acknowledged packets */
    double rtt_mean_s;              /* mean of all samples (0 without samples) */
    double rtt_first_half_mean_s;   /* mean of the first floor(n/2) samples */
    double rtt_second_half_mean_s;  /* mean of the remaining samples */
} MoccMonitorInterval;

typedef struct MoccController MoccController;

/* Loads and validates the export folder `policy_dir` and creates a controller for the
 * objective (throughput, latency, loss weights; positive, summing to 1). On failure returns
 * NULL and writes a NUL-terminated message into `err` (when `err_len` > 0). */
MoccController *mocc_controller_new(const char *policy_dir, const double objective[3],
                                    char *err, size_t err_len);

/* Starts a connection at `start_rate_pps` (clamped to the policy's rate limits); returns the
 * rate for its first MI, or NaN (and changes nothing) when `start_rate_pps` is not a positive
 * number. */
double mocc_controller_reset(MoccController *cc, double start_rate_pps);

/* mocc_controller_reset on a path whose one-way delay is estimated at `one_way_delay_s` (half a
 * handshake's RTT; 0 when unknown): the first MIs are sized from it, as in training. */
double mocc_controller_start(MoccController *cc, double start_rate_pps, double one_way_delay_s);

/* Length of the next MI at the current rate (s), as trained: from the one-way delay estimate
 * until an MI had RTT samples, then from the last sampled mean RTT, floored at the policy's
 * minimum packets per MI. NaN for a NULL controller. */
double mocc_controller_mi_duration_s(const MoccController *cc);

/* Folds in a finished MI; returns the rate for the next one. */
double mocc_controller_on_monitor_interval(MoccController *cc, const MoccMonitorInterval *mi);

/* Switches the objective; returns 0, or -1 (and keeps the old one) if it is invalid. */
int mocc_controller_set_objective(MoccController *cc, const double objective[3]);

/* Length of the next MI as trained (rtt_factor x the last mean RTT), or a negative number
 * before any MI had RTT samples. */
double mocc_controller_next_mi_duration_s(const MoccController *cc);

/* Frees a controller (NULL is ignored). */
void mocc_controller_free(MoccController *cc);

/* A controller fed packet events: it counts them into MIs cut by the simulator's rule. */
typedef struct MoccFlow MoccFlow;

/* Loads and validates `policy_dir` and creates a flow for the objective that starts at
 * `start_rate_pps` (clamped to the policy's rate limits; not a positive number: refused). On
 * failure returns NULL and writes a message into `err`. */
MoccFlow *mocc_flow_new(const char *policy_dir, const double objective[3], double start_rate_pps,
                        char *err, size_t err_len);

/* Starts the connection's first MI at `now_s`, its one-way delay estimated at
 * `one_way_delay_s` (0 when unknown); returns the rate. The first packet leaves one packet
 * interval later. */
double mocc_flow_start(MoccFlow *f, double now_s, double one_way_delay_s);

/* A packet left at `t_s` (its scheduled departure). Returns the rate to pace at. */
double mocc_flow_on_sent(MoccFlow *f, double t_s);

/* mocc_flow_on_sent from a transport that knows whether its application had more data
 * waiting: `app_limited` nonzero when this packet left it with none. While the application
 * limits the sender the rate is held, and grows to at most twice what it sends. */
double mocc_flow_on_sent_limited(MoccFlow *f, double t_s, int app_limited);

/* A packet was acknowledged at `t_s` with RTT sample `rtt_s`. Returns the rate to pace at. */
double mocc_flow_on_acked(MoccFlow *f, double t_s, double rtt_s);

/* `packets` packets were found lost at `t_s`. Returns the rate to pace at. */
double mocc_flow_on_lost(MoccFlow *f, double t_s, uint64_t packets);

/* Switches the objective from the next decision on; returns 0, or -1 if it is invalid. */
int mocc_flow_set_objective(MoccFlow *f, const double objective[3]);

/* Frees a flow (NULL is ignored). Every mocc_flow_* call returns NaN (or -1) for NULL. */
void mocc_flow_free(MoccFlow *f);

#ifdef __cplusplus
}
#endif

#endif /* MOCC_POLICY_H */
