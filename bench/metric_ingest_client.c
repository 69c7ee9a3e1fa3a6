/* metric_ingest_client: the load generator of bench/metric_ingest.sh.
 *
 * One process per trial channel, each with one keep-alive connection (as NNI's trial
 * SDK uses), PUTs PERIODICAL metric commands for its own trial and sends the next one
 * only when the reply to the previous one came (a closed loop, like a trial that
 * reports as fast as it can). A client written in C, so that the figure measures the
 * api and not the client: Python's http.client costs ~0.4 ms of CPU per request here.
 *
 *   usage: metric_ingest_client PORT SECONDS CHANNELS_FILE
 *   CHANNELS_FILE: one line per client, "<trial id> <channel path> [<port>]" (PORT
 *   when absent: each trial's supervisor serves its channel on a port of its own)
 *   prints: "acknowledged N errors E p50_us P p99_us Q cpu_ms C" (C: CPU time of the
 *   clients); exit 1 on any non-200 reply */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 64
#define BUCKET_US 10
#define NBUCKETS 20000 /* 0 .. 200 ms in 10 µs steps; the last bucket holds the rest */

struct result {
    int64_t acked, errors;
    uint32_t hist[NBUCKETS];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads one HTTP response; returns its status code, or -1. */
static int read_response(int fd, char *buf, size_t cap)
{
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        if (have + 1 >= cap)
            return -1;
        ssize_t n = read(fd, buf + have, cap - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        have += (size_t)n;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    int code = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
        return -1;
    size_t clen = 0;
    for (char *l = strstr(buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n"))
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            clen = strtoul(l + 17, NULL, 10);
    size_t body_have = have - (size_t)(end + 4 - buf);
    while (body_have < clen) {
        ssize_t n = read(fd, buf, cap - 1);
        if (n <= 0)
            return -1;
        body_have += (size_t)n;
    }
    return code;
}

static void client(int port, double start, double dur, const char *trial, const char *path, struct result *res)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        perror("connect");
        res->errors++;
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (now_s() < start)
        usleep(200);
    char body[512], req[1024], buf[8192];
    double end = start + dur;
    for (int64_t seq = 0; now_s() < end; seq++) {
        /* the SDK's shape: the metric record is a JSON string inside the command */
        int bn = snprintf(body, sizeof body,
                          "{\"type\": \"metric\", \"metric\": \"{\\\"parameter_id\\\": 0, \\\"trial_job_id\\\": "
                          "\\\"%s\\\", \\\"type\\\": \\\"PERIODICAL\\\", \\\"sequence\\\": %lld, "
                          "\\\"value\\\": \\\"%g\\\"}\"}",
                          trial, (long long)seq, (double)seq * 0.5);
        int rn = snprintf(req, sizeof req,
                          "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                          "Content-Length: %d\r\n\r\n%s",
                          path, port, bn, body);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (write_all(fd, req, (size_t)rn) < 0) {
            res->errors++;
            break;
        }
        int code = read_response(fd, buf, sizeof buf);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (code != 200) {
            fprintf(stderr, "trial %s: HTTP %d at sequence %lld\n", trial, code, (long long)seq);
            res->errors++;
            break;
        }
        res->acked++;
        int64_t us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
        int64_t b = us / BUCKET_US;
        res->hist[b < NBUCKETS ? b : NBUCKETS - 1]++;
    }
    close(fd);
}

static int64_t percentile_us(const uint64_t *hist, int64_t total, double q)
{
    int64_t want = (int64_t)(q * (double)total), seen = 0;
    for (int i = 0; i < NBUCKETS; i++) {
        seen += (int64_t)hist[i];
        if (seen > want)
            return (int64_t)i * BUCKET_US + BUCKET_US / 2;
    }
    return (int64_t)NBUCKETS * BUCKET_US;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: metric_ingest_client PORT SECONDS CHANNELS_FILE\n");
        return 2;
    }
    int port = atoi(argv[1]);
    double dur = atof(argv[2]);
    FILE *f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 2;
    }
    char trial[MAX_CLIENTS][64], path[MAX_CLIENTS][256], line[512];
    int n = 0, ports[MAX_CLIENTS];
    while (n < MAX_CLIENTS && fgets(line, sizeof line, f)) {
        ports[n] = port;
        if (sscanf(line, "%63s %255s %d", trial[n], path[n], &ports[n]) >= 2)
            n++;
    }
    fclose(f);
    if (n == 0) {
        fprintf(stderr, "%s: no channels\n", argv[3]);
        return 2;
    }
    struct result *res = mmap(NULL, sizeof *res * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(res, 0, sizeof *res * (size_t)n);
    double start = now_s() + 0.3;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            client(ports[i], start, dur, trial[i], path[i], &res[i]);
            _exit(0);
        }
        if (pid < 0) {
            perror("fork");
            return 2;
        }
    }
    while (wait(NULL) > 0)
        ;
    static uint64_t hist[NBUCKETS];
    int64_t acked = 0, errors = 0;
    for (int i = 0; i < n; i++) {
        acked += res[i].acked;
        errors += res[i].errors;
        for (int b = 0; b < NBUCKETS; b++)
            hist[b] += res[i].hist[b];
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    long long cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000LL +
                       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
    printf("acknowledged %lld errors %lld p50_us %lld p99_us %lld cpu_ms %lld\n", (long long)acked,
           (long long)errors, (long long)percentile_us(hist, acked, 0.5), (long long)percentile_us(hist, acked, 0.99),
           cpu_ms);
    return errors ? 1 : 0;
}
