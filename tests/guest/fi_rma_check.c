/*
 * fi_rma_check: libfabric RMA and atomics between two hosts over an RDM
 * endpoint, every byte checked (issue 31; tests/guest/test_middleware.py).
 *
 *     fi_rma_check [-p PROVIDER] [-P PORT]            # server
 *     fi_rma_check [-p PROVIDER] [-P PORT] SERVER     # client
 *
 * Debian's libfabric-bin ships fi_pingpong and none of the fabtests RMA
 * programs (fi_rma_bw, fi_rdm_rma_event), and Open MPI 5.0's one-sided
 * path over libfabric (btl ofi under osc rdma) refuses ofi_rxm
 * (btl_ofi_component.c, validate_info: "ofi_rxm does not support
 * FI_DELIVERY_COMPLETE"), so this is the smallest program that drives
 * fi_read, fi_write and fi_atomic through a provider such as
 * "verbs;ofi_rxm" (the default) and checks what they did.
 *
 * The two ends swap their endpoint names, memory keys and buffer
 * addresses over a TCP connection (like fi_pingpong's control port), then
 * the client alone moves data (fi_rma(3), fi_atomic(3)):
 *   1. reads a region the server filled with its own pattern;
 *   2. for each size, writes a pattern into the server and reads it back
 *      into another buffer, ITERATIONS times;
 *   3. adds to a 64-bit word in the server (FI_SUM), fetches the sum,
 *      swaps it (FI_CSWAP) and reads the word back;
 *   4. sends the server a message naming the last write; the server checks
 *      its own memory (the last pattern, the swapped word) and answers.
 * Prints "fi_rma_check: ..." lines; exits 0 only if every check passed.
 * Built on the host against Debian's libfabric-dev and copied into the
 * guest at run time (docs/user-guide.rst, "Middleware").
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MAX_SIZE (4u << 20)
#define ITERATIONS 10
#define TIMEOUT_S 60
#define NAME_MAX_LEN 256

static const size_t sizes[] = { 1, 64, 4096, 65536, 1u << 20, MAX_SIZE };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* The server's registered memory: the client's write target, the region
 * the server fills for the client to read, and the atomic word. */
#define WRITE_OFF 0
#define READ_OFF MAX_SIZE
#define ATOMIC_OFF (2 * (size_t)MAX_SIZE)
#define BUF_LEN (ATOMIC_OFF + 64)
/* The client's: its write source at 0, its read target at MAX_SIZE,
 * atomic operands and results after them. */

struct peer_info {
	uint32_t name_len;
	uint8_t name[NAME_MAX_LEN];
	uint64_t key;
	uint64_t addr;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_mr *mr;
static void *desc;
static uint8_t *buf;
static fi_addr_t peer;
static struct fi_context ctx[2];
static const char *role = "server";

static void die(const char *fmt, ...)
{
	va_list ap;

	printf("fi_rma_check: FAIL %s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

#define CHECK(call) do { \
	int ret_ = (int)(call); \
	if (ret_) \
		die("%s: %s (%d)", #call, fi_strerror(-ret_), ret_); \
} while (0)

/* A byte that depends on its offset, the iteration, the size and who
 * wrote it, so that a lost, stale or misplaced byte shows. */
static uint8_t pattern(size_t off, unsigned iter, size_t size, int who)
{
	return (uint8_t)(off * 7 + (off >> 8) * 13 + iter * 101 + size * 3 +
			 who * 59);
}

static void fill(uint8_t *p, unsigned iter, size_t size, int who)
{
	for (size_t i = 0; i < size; i++)
		p[i] = pattern(i, iter, size, who);
}

/* The first of len bytes at p that fill(p, iter, size, who) did not
 * write, or -1. */
static long first_difference(const uint8_t *p, size_t len, unsigned iter,
			     size_t size, int who)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(i, iter, size, who))
			return (long)i;
	return -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Completions the EAGAIN loop of POST_ONLY took off the CQ. */
static unsigned early_completions;

/* One completion from the CQ (every operation asks for one): polling is
 * also what makes RXM progress (fi_domain(3), FI_PROGRESS_MANUAL). */
static void wait_completion(const char *what)
{
	struct fi_cq_entry entry;
	struct fi_cq_err_entry err;
	double end = now() + TIMEOUT_S;
	ssize_t ret;

	if (early_completions) {
		early_completions--;
		return;
	}
	for (;;) {
		ret = fi_cq_read(cq, &entry, 1);
		if (ret == 1)
			return;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			die("%s completed with error %d: %s", what, err.err,
			    fi_cq_strerror(cq, err.prov_errno, err.err_data,
					   NULL, 0));
		}
		if (ret != -FI_EAGAIN)
			die("fi_cq_read after %s: %s", what,
			    fi_strerror((int)-ret));
		if (now() > end)
			die("no completion for %s in %d s", what, TIMEOUT_S);
	}
}

/* Post an operation, retrying while the provider is out of resources
 * (-FI_EAGAIN: progress the CQ and try again, fi_msg(3)). */
#define POST_ONLY(what, call) do { \
	ssize_t r_; \
	double end_ = now() + TIMEOUT_S; \
	while ((r_ = (call)) == -FI_EAGAIN) { \
		struct fi_cq_entry e_; \
		if (fi_cq_read(cq, &e_, 1) == 1) \
			early_completions++; \
		if (now() > end_) \
			die("%s: provider busy for %d s", what, TIMEOUT_S); \
	} \
	if (r_) \
		die("%s: %s", what, fi_strerror((int)-r_)); \
} while (0)

/* Post an operation and wait for its completion. */
#define POST(what, call) do { \
	POST_ONLY(what, call); \
	wait_completion(what); \
} while (0)

static void setup(const char *provider)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .count = 2 };
	uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ |
			  FI_REMOTE_WRITE | FI_SEND | FI_RECV;
	int ret;

	if (!hints)
		die("fi_allocinfo failed");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
	hints->mode = FI_CONTEXT;
	/* The memory registration modes this program handles: it passes
	 * every descriptor, registers its buffers, addresses the peer's
	 * memory by virtual address and takes the key the provider picks. */
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(provider);
	ret = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
	if (ret)
		die("fi_getinfo for provider \"%s\", RDM endpoints with RMA "
		    "and atomics: %s (does fi_info -p \"%s\" list it?)",
		    provider, fi_strerror(-ret), provider);
	fi_freeinfo(hints);
	printf("fi_rma_check: %s provider %s domain %s\n", role,
	       info->fabric_attr->prov_name, info->domain_attr->name);

	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	av_attr.type = info->domain_attr->av_type == FI_AV_UNSPEC ?
		       FI_AV_MAP : info->domain_attr->av_type;
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	if (posix_memalign((void **)&buf, 4096, BUF_LEN))
		die("out of memory for %zu bytes", (size_t)BUF_LEN);
	memset(buf, 0, BUF_LEN);
	CHECK(fi_mr_reg(domain, buf, BUF_LEN, access, 0, 0, 0, &mr, NULL));
	if (info->domain_attr->mr_mode & FI_MR_ENDPOINT)
		die("the provider wants FI_MR_ENDPOINT, which was not asked "
		    "for");
	desc = fi_mr_desc(mr);
}

static void local_info(struct peer_info *me)
{
	size_t len = sizeof(me->name);

	memset(me, 0, sizeof(*me));
	CHECK(fi_getname(&ep->fid, me->name, &len));
	me->name_len = (uint32_t)len;
	me->key = fi_mr_key(mr);
	/* FI_MR_VIRT_ADDR: the peer names our memory by its address;
	 * otherwise by its offset in the registration. */
	me->addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		   (uint64_t)(uintptr_t)buf : 0;
}

static void write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n <= 0)
			die("control connection: write: %s", strerror(errno));
		b += n;
		len -= n;
	}
}

static void read_all(int fd, void *p, size_t len)
{
	uint8_t *b = p;

	while (len) {
		ssize_t n = read(fd, b, len);

		if (n <= 0)
			die("control connection: read: %s",
			    n ? strerror(errno) : "closed by the peer");
		b += n;
		len -= n;
	}
}

static int control_connect(const char *server, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int fd, one = 1, ret;

	if (!server) {
		int lfd;

		hints.ai_flags = AI_PASSIVE;
		ret = getaddrinfo(NULL, port, &hints, &res);
		if (ret)
			die("control port %s: %s", port, gai_strerror(ret));
		lfd = socket(res->ai_family, res->ai_socktype, 0);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (lfd < 0 || bind(lfd, res->ai_addr, res->ai_addrlen) ||
		    listen(lfd, 1))
			die("listening on control port %s: %s", port,
			    strerror(errno));
		freeaddrinfo(res);
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept on control port %s: %s", port,
			    strerror(errno));
		close(lfd);
		return fd;
	}
	ret = getaddrinfo(server, port, &hints, &res);
	if (ret)
		die("%s:%s: %s", server, port, gai_strerror(ret));
	fd = socket(res->ai_family, res->ai_socktype, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen))
		die("connecting to %s:%s: %s (is the server running?)",
		    server, port, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

static void exchange(int fd, struct peer_info *remote)
{
	struct peer_info me;

	local_info(&me);
	write_all(fd, &me, sizeof(me));
	read_all(fd, remote, sizeof(*remote));
	if (remote->name_len > NAME_MAX_LEN)
		die("peer's endpoint name of %u bytes", remote->name_len);
	if (fi_av_insert(av, remote->name, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert of the peer's endpoint name failed");
}

/* A message to or from the peer (FI_MSG), through buf + off. */
static void send_msg(size_t off, const char *text)
{
	size_t len = strlen(text) + 1;

	memcpy(buf + off, text, len);
	POST("fi_send", fi_send(ep, buf + off, len, desc, peer, &ctx[1]));
}

static void client(const char *server, const char *port)
{
	struct peer_info remote;
	uint8_t *src = buf, *dst = buf + MAX_SIZE;
	uint64_t *operand = (uint64_t *)(buf + ATOMIC_OFF);
	uint64_t *result = operand + 1, *compare = operand + 2;
	uint64_t sum = 0, bytes = 0;
	char *answer = (char *)buf + ATOMIC_OFF + 32;
	double start, seconds;
	long bad;
	int fd;

	role = "client";
	fd = control_connect(server, port);
	exchange(fd, &remote);

	/* 1. Read what the server wrote into its own memory. */
	for (size_t s = 0; s < NSIZES; s++) {
		memset(dst, 0, sizes[s]);
		POST("fi_read", fi_read(ep, dst, sizes[s], desc, peer,
					remote.addr + READ_OFF, remote.key,
					&ctx[0]));
		bad = first_difference(dst, sizes[s], 0, MAX_SIZE, 1);
		if (bad >= 0)
			die("fi_read of the server's %zu bytes: byte %ld "
			    "differs", sizes[s], bad);
	}
	printf("fi_rma_check: read ok, %zu sizes of the server's pattern\n",
	       NSIZES);

	/* 2. Write, read back, compare. */
	start = now();
	for (size_t s = 0; s < NSIZES; s++) {
		for (unsigned i = 0; i < ITERATIONS; i++) {
			fill(src, i, sizes[s], 0);
			POST("fi_write", fi_write(ep, src, sizes[s], desc, peer,
						  remote.addr + WRITE_OFF,
						  remote.key, &ctx[0]));
			memset(dst, 0, sizes[s]);
			POST("fi_read", fi_read(ep, dst, sizes[s], desc, peer,
						remote.addr + WRITE_OFF,
						remote.key, &ctx[0]));
			bad = first_difference(dst, sizes[s], i, sizes[s], 0);
			if (bad >= 0)
				die("write %u of %zu bytes read back: byte "
				    "%ld differs", i, sizes[s], bad);
			bytes += 2 * sizes[s];
		}
	}
	seconds = now() - start;
	printf("fi_rma_check: write and read back ok, sizes 1 to %u bytes, "
	       "%d each, %.1f MB/s\n", MAX_SIZE, ITERATIONS,
	       bytes / seconds / 1e6);

	/* 3. Atomics on the server's word (fi_atomic(3)): ITERATIONS adds,
	 * a fetching add of 0 that returns the sum, a compare-and-swap of
	 * the sum for 42, and a read of the word. */
	for (unsigned i = 1; i <= ITERATIONS; i++) {
		*operand = i * 1000;
		sum += *operand;
		POST("fi_atomic FI_SUM",
		     fi_atomic(ep, operand, 1, desc, peer,
			       remote.addr + ATOMIC_OFF, remote.key,
			       FI_UINT64, FI_SUM, &ctx[0]));
	}
	*operand = 0;
	*result = 0;
	POST("fi_fetch_atomic FI_SUM",
	     fi_fetch_atomic(ep, operand, 1, desc, result, desc, peer,
			     remote.addr + ATOMIC_OFF, remote.key, FI_UINT64,
			     FI_SUM, &ctx[0]));
	if (*result != sum)
		die("fetched sum %" PRIu64 ", not %" PRIu64, *result, sum);
	*operand = 42;
	*compare = sum;
	*result = 0;
	POST("fi_compare_atomic FI_CSWAP",
	     fi_compare_atomic(ep, operand, 1, desc, compare, desc, result,
			       desc, peer, remote.addr + ATOMIC_OFF,
			       remote.key, FI_UINT64, FI_CSWAP, &ctx[0]));
	if (*result != sum)
		die("compare-and-swap returned %" PRIu64 ", not %" PRIu64,
		    *result, sum);
	memset(dst, 0, 8);
	POST("fi_read", fi_read(ep, dst, 8, desc, peer,
				remote.addr + ATOMIC_OFF, remote.key, &ctx[0]));
	if (memcmp(dst, operand, 8))
		die("the word after compare-and-swap is not 42");
	printf("fi_rma_check: atomics ok, sum %" PRIu64 " fetched, swapped "
	       "for 42\n", sum);

	/* 4. The server checks its memory and answers: a receive for the
	 * answer, then the message; their completions come in either order. */
	POST_ONLY("fi_recv", fi_recv(ep, answer, 32, desc, peer, &ctx[0]));
	snprintf((char *)src, 32, "check %u %zu", ITERATIONS - 1,
		 sizes[NSIZES - 1]);
	POST_ONLY("fi_send", fi_send(ep, src, strlen((char *)src) + 1, desc,
				      peer, &ctx[1]));
	wait_completion("fi_send of the check message");
	wait_completion("fi_recv of the server's answer");
	answer[31] = 0;
	if (strcmp(answer, "ok"))
		die("the server found: %s", answer);
	printf("fi_rma_check: server checked its memory: ok\n");
	close(fd);
}

static void server(const char *port)
{
	struct peer_info remote;
	unsigned iter;
	size_t size;
	char *msg = (char *)buf + ATOMIC_OFF + 8, answer[32];
	uint64_t word;
	long bad;
	int fd;
	char c;

	fill(buf + READ_OFF, 0, MAX_SIZE, 1);
	fd = control_connect(NULL, port);
	exchange(fd, &remote);
	/* Polling here is what lets RXM accept the client's connection and
	 * answer its atomics, until the client's message arrives. */
	POST_ONLY("fi_recv", fi_recv(ep, msg, 24, desc, peer, &ctx[0]));
	wait_completion("fi_recv of the client's message");
	msg[23] = 0;
	if (sscanf(msg, "check %u %zu", &iter, &size) != 2 ||
	    size > MAX_SIZE)
		die("unexpected message \"%s\"", msg);
	bad = first_difference(buf + WRITE_OFF, size, iter, size, 0);
	memcpy(&word, buf + ATOMIC_OFF, 8);
	if (bad >= 0)
		snprintf(answer, sizeof(answer), "byte %ld differs", bad);
	else if (word != 42)
		snprintf(answer, sizeof(answer), "word %" PRIu64, word);
	else
		snprintf(answer, sizeof(answer), "ok");
	printf("fi_rma_check: server: last write of %zu bytes and the "
	       "atomic word: %s\n", size, answer);
	send_msg(ATOMIC_OFF + 32, answer);
	/* The client closes the control connection when it is done. */
	if (read(fd, &c, 1) != 0)
		die("control connection: unexpected data");
	close(fd);
	if (strcmp(answer, "ok"))
		exit(1);
}

int main(int argc, char **argv)
{
	const char *provider = "verbs;ofi_rxm", *port = "47593";
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "p:P:")) != -1) {
		switch (opt) {
		case 'p':
			provider = optarg;
			break;
		case 'P':
			port = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-p PROVIDER] [-P PORT] "
				"[SERVER]\n", argv[0]);
			return 2;
		}
	}
	role = optind < argc ? "client" : "server";
	setup(provider);
	if (optind < argc)
		client(argv[optind], port);
	else
		server(port);
	fi_close(&ep->fid);
	fi_close(&mr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}
