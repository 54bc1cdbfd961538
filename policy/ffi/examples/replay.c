/*
 * Replays recorded MI statistics (mocc simulate --mi-out FILE) through an exported policy from C.
 *
 *   cargo build --release -p mocc-policy-ffi
 *   cc -O2 -I policy/ffi/include policy/ffi/examples/replay.c target/release/libmocc_policy_ffi.a \
 *      -lpthread -ldl -lm -o /tmp/replay
 *   /tmp/replay checkpoints/mocc-omega36 policy/examples/data/mis.csv
 */
#include <stdio.h>
#include <stdlib.h>
#include "mocc_policy.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s POLICY_DIR MIS.csv\n", argv[0]);
        return 2;
    }
    char err[512];
    const double objective[3] = {0.6, 0.3, 0.1};
    MoccController *cc = mocc_controller_new(argv[1], objective, err, sizeof err);
    if (!cc) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        mocc_controller_free(cc);
        return 1;
    }
    char line[1024];
    if (!fgets(line, sizeof line, f)) { /* header */
        fclose(f);
        mocc_controller_free(cc);
        return 1;
    }
    MoccMonitorInterval mi;
    unsigned long long count;
    int n = 0;
    printf("mi,next_rate_pps\n");
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%llu,%lf,%lf,%lf", &mi.bytes_sent,
                   &mi.bytes_acked, &mi.bytes_lost, &mi.send_start_s, &mi.send_end_s,
                   &mi.recv_start_s, &mi.recv_end_s, &count, &mi.rtt_mean_s,
                   &mi.rtt_first_half_mean_s, &mi.rtt_second_half_mean_s) != 11) {
            fprintf(stderr, "line %d: expected 11 columns\n", n + 2);
            break;
        }
        mi.rtt_count = count;
        if (n == 0) {
            mocc_controller_reset(cc, 8.0 * mi.bytes_sent / 12000.0 / (mi.send_end_s - mi.send_start_s));
        }
        printf("%d,%.1f\n", ++n, mocc_controller_on_monitor_interval(cc, &mi));
    }
    fclose(f);
    mocc_controller_free(cc);
    return 0;
}
