/* A preload for a client that is not ours: the socket options draft-ietf-ippm-responsiveness
 * asks of a test's connections, applied where the client sets TCP_NODELAY.
 *
 * Cloudflare's mach 0.4.0 turns TCP_NODELAY off on every connection (Nagle's algorithm on).
 * A foreign probe's request then waits for the acknowledgement of the HTTP/2 preface written
 * just before it, a round trip its request phase counts. It sets no TCP_NOTSENT_LOWAT either,
 * so on uploads a self probe waits behind a socket buffer of its own data. The netpath test
 * runs mach as it is and with this preload, to tell those two choices from a difference in
 * what the two clients measure.
 *
 * Built by the test with `cc -shared -fPIC`; used through LD_PRELOAD.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

/* What wirespeed's responsiveness client keeps unsent in a socket. */
#define NOTSENT_LOWAT (16 * 1024)

typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);

int setsockopt(int fd, int level, int name, const void *value, socklen_t len) {
    static setsockopt_fn next;
    if (!next) {
        next = (setsockopt_fn)dlsym(RTLD_NEXT, "setsockopt");
    }
    if (level == IPPROTO_TCP && name == TCP_NODELAY) {
        int on = 1;
        int lowat = NOTSENT_LOWAT;
        next(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
        return next(fd, level, name, &on, sizeof on);
    }
    return next(fd, level, name, value, len);
}
