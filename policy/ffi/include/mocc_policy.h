/*
 * C ABI of mocc-policy: run an exported mocc policy (policy.json + policy.safetensors) inside a
 * sender, without libtorch. Build: cargo build --release -p mocc-policy-ffi, then link
 * target/release/libmocc_policy_ffi.a (or .so).
 *
 *   char err[256];
 *   double w[3] = {0.6, 0.3, 0.1};
 *   MoccController *cc = mocc_controller_new("checkpoints/mocc-omega36", w, err, sizeof err);
 *   if (!cc) { fprintf(stderr, "%s\n", err); return 1; }
 *   double rate = mocc_controller_reset(cc, 100.0);
 *   ... at the end of every monitor interval:
 *   rate = mocc_controller_on_monitor_interval(cc, &mi);
 *   mocc_controller_free(cc);
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

/* What a sender knows about one finished monitor interval. */
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

/* Starts a connection at `start_rate_pps`; returns the rate for its first MI. */
double mocc_controller_reset(MoccController *cc, double start_rate_pps);

/* Folds in a finished MI; returns the rate for the next one. */
double mocc_controller_on_monitor_interval(MoccController *cc, const MoccMonitorInterval *mi);

/* Switches the objective; returns 0, or -1 (and keeps the old one) if it is invalid. */
int mocc_controller_set_objective(MoccController *cc, const double objective[3]);

/* Length of the next MI as trained (rtt_factor x the last mean RTT), or a negative number
 * before any MI had RTT samples. */
double mocc_controller_next_mi_duration_s(const MoccController *cc);

/* Frees a controller (NULL is ignored). */
void mocc_controller_free(MoccController *cc);

#ifdef __cplusplus
}
#endif

#endif /* MOCC_POLICY_H */
