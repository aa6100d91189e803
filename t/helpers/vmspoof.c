/*
 * vmspoof.c — what a microVM guest whose root was taken may send, for
 * t9003: raw Ethernet frames on the guest's interface with a forged source
 * (another host's address, another MAC), and datagrams to another host
 * with TTL 1.  The test builds it static on the host and installs it
 * setuid root in its own copy of the guest image.
 *
 *	vmspoof IFACE GATEWAY PROXY_PORT FAR_ADDR FAR_PORT
 *
 * GATEWAY is the host's end of the tap (where the proxy listens, on
 * PROXY_PORT); FAR_ADDR:FAR_PORT another host.  Each attempt is sent
 * VMSPOOF_TIMES times, with its line "sent NAME N"; then "spoofed N" (the
 * frames with a forged source among them), and after VMSPOOF_LISTEN_MS of
 * listening "icmp-errors N": the ICMP errors (time exceeded, unreachable)
 * that came back to the guest.  Exit 0 when every frame was sent, 1 when
 * one could not be (said on stderr), 2 on a usage error.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VMSPOOF_TIMES		3	/* frames of each attempt */
#define VMSPOOF_LISTEN_MS	3000	/* for ICMP errors, after the last */
#define VMSPOOF_FRAME_MAX	128	/* bytes of the largest frame */
#define VMSPOOF_SEQ		0x494e5455U	/* "INTU": the guest's choice */
#define VMSPOOF_SPORT		40404	/* the forged connection's port */

/* What every frame needs: the socket, the interface, who is who. */
struct spoof {
	int		 fd;		/* AF_PACKET, SOCK_RAW */
	int		 ifindex;
	unsigned char	 mac[ETH_ALEN];	/* the guest's */
	unsigned char	 gwmac[ETH_ALEN];
	struct in_addr	 self, gw, far;
	unsigned int	 proxy_port, far_port;
	unsigned int	 spoofed;	/* frames sent with a forged source */
};

/* The one's-complement sum of RFC 1071, over len bytes, from sum. */
static uint16_t
spoof_cksum(const void *data, size_t len, uint32_t sum)
{
	const unsigned char *p = data;

	while (len > 1) {
		sum += (uint32_t)(p[0] << 8 | p[1]);
		p += 2;
		len -= 2;
	}
	if (len == 1)
		sum += (uint32_t)(p[0] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* The pseudo-header's part of a TCP or UDP checksum. */
static uint32_t
spoof_pseudo(struct in_addr src, struct in_addr dst, int proto, size_t len)
{
	uint32_t s = ntohl(src.s_addr), d = ntohl(dst.s_addr);

	return (s >> 16) + (s & 0xffff) + (d >> 16) + (d & 0xffff) +
	    (uint32_t)proto + (uint32_t)len;
}

/* An Ethernet header at f: to the host, from mac, of type. */
static size_t
spoof_eth(unsigned char *f, const unsigned char *mac,
    const unsigned char *dst, uint16_t type)
{
	memcpy(f, dst, ETH_ALEN);
	memcpy(f + ETH_ALEN, mac, ETH_ALEN);
	f[12] = (unsigned char)(type >> 8);
	f[13] = (unsigned char)type;
	return 14;
}

/* Whether a frame from src and mac has a forged source. */
static int
spoof_forged(const struct spoof *s, struct in_addr src,
    const unsigned char *mac)
{
	return src.s_addr != s->self.s_addr ||
	    memcmp(mac, s->mac, ETH_ALEN) != 0;
}

/* An IPv4 header at f (20 bytes) for a payload of len bytes. */
static size_t
spoof_ip(unsigned char *f, struct in_addr src, struct in_addr dst, int proto,
    int ttl, size_t len)
{
	uint16_t total = (uint16_t)(20 + len), ck;

	memset(f, 0, 20);
	f[0] = 0x45;
	f[2] = (unsigned char)(total >> 8);
	f[3] = (unsigned char)total;
	f[4] = 0x12;			/* the id: any */
	f[5] = 0x34;
	f[8] = (unsigned char)ttl;
	f[9] = (unsigned char)proto;
	memcpy(f + 12, &src, 4);
	memcpy(f + 16, &dst, 4);
	ck = spoof_cksum(f, 20, 0);
	memcpy(f + 10, &ck, 2);
	return 20;
}

/* The Ethernet and IPv4 headers of a frame from mac and src to the host. */
static size_t
spoof_head(const struct spoof *s, unsigned char *f, const unsigned char *mac,
    struct in_addr src, struct in_addr dst, int proto, int ttl, size_t len)
{
	size_t n = spoof_eth(f, mac, s->gwmac, ETHERTYPE_IP);

	return n + spoof_ip(f + n, src, dst, proto, ttl, len);
}

static int
spoof_send(struct spoof *s, const char *name, const unsigned char *f,
    size_t len, int forged)
{
	struct sockaddr_ll sll;
	int i;

	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = s->ifindex;
	sll.sll_halen = ETH_ALEN;
	memcpy(sll.sll_addr, f, ETH_ALEN);
	for (i = 0; i < VMSPOOF_TIMES; i++) {
		if (sendto(s->fd, f, len, 0, (struct sockaddr *)&sll,
		    sizeof(sll)) != (ssize_t)len) {
			fprintf(stderr, "vmspoof: cannot send %s: %s\n", name,
			    strerror(errno));
			return -1;
		}
		if (forged)
			s->spoofed++;
	}
	printf("sent %s %d\n", name, VMSPOOF_TIMES);
	return 0;
}

/* A TCP segment from src:VMSPOOF_SPORT and mac to the proxy, with flags. */
static int
spoof_tcp(struct spoof *s, const char *name, struct in_addr src,
    const unsigned char *mac, uint8_t flags)
{
	unsigned char f[VMSPOOF_FRAME_MAX], *t;
	uint32_t seq = htonl(VMSPOOF_SEQ), ack = htonl(VMSPOOF_SEQ + 1);
	uint16_t ck;
	size_t n;

	n = spoof_head(s, f, mac, src, s->gw, IPPROTO_TCP, 64, 20);
	t = f + n;
	memset(t, 0, 20);
	t[0] = VMSPOOF_SPORT >> 8;
	t[1] = VMSPOOF_SPORT & 0xff;
	t[2] = (unsigned char)(s->proxy_port >> 8);
	t[3] = (unsigned char)s->proxy_port;
	memcpy(t + 4, &seq, 4);
	if (flags & 0x10)
		memcpy(t + 8, &ack, 4);
	t[12] = 5 << 4;
	t[13] = flags;
	t[14] = 0xff;			/* window */
	ck = spoof_cksum(t, 20, spoof_pseudo(src, s->gw, IPPROTO_TCP, 20));
	memcpy(t + 16, &ck, 2);
	return spoof_send(s, name, f, n + 20, spoof_forged(s, src, mac));
}

/* A UDP datagram from src to the far host, with TTL 1. */
static int
spoof_udp_ttl1(struct spoof *s, const char *name, struct in_addr src)
{
	static const char data[] = "bytes the guest chose";
	unsigned char f[VMSPOOF_FRAME_MAX], *u;
	size_t n, len = 8 + sizeof(data);
	uint16_t ck;

	n = spoof_head(s, f, s->mac, src, s->far, IPPROTO_UDP, 1, len);
	u = f + n;
	u[0] = VMSPOOF_SPORT >> 8;
	u[1] = VMSPOOF_SPORT & 0xff;
	u[2] = (unsigned char)(s->far_port >> 8);
	u[3] = (unsigned char)s->far_port;
	u[4] = (unsigned char)(len >> 8);
	u[5] = (unsigned char)len;
	u[6] = u[7] = 0;
	memcpy(u + 8, data, sizeof(data));
	ck = spoof_cksum(u, len, spoof_pseudo(src, s->far, IPPROTO_UDP, len));
	memcpy(u + 6, &ck, 2);
	return spoof_send(s, name, f, n + len, spoof_forged(s, src, s->mac));
}

/* An ICMP echo request to the host, from src and the MAC mac. */
static int
spoof_echo(struct spoof *s, const char *name, struct in_addr src,
    const unsigned char *mac)
{
	unsigned char f[VMSPOOF_FRAME_MAX], *c;
	size_t n;
	uint16_t ck;

	n = spoof_head(s, f, mac, src, s->gw, IPPROTO_ICMP, 64, 16);
	c = f + n;
	memset(c, 0, 16);
	c[0] = 8;			/* echo request */
	c[4] = 0x49;			/* id, sequence, data: any */
	c[6] = 1;
	memcpy(c + 8, "intutic!", 8);
	ck = spoof_cksum(c, 16, 0);
	memcpy(c + 2, &ck, 2);
	return spoof_send(s, name, f, n + 16, spoof_forged(s, src, mac));
}

/* A gratuitous ARP (a broadcast reply) saying that ip is at mac. */
static int
spoof_arp(struct spoof *s, const char *name, struct in_addr ip,
    const unsigned char *mac)
{
	static const unsigned char bcast[ETH_ALEN] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};
	static const unsigned char eth_ipv4_reply[8] = {
		0, 1, 8, 0, 6, 4, 0, 2
	};
	unsigned char f[VMSPOOF_FRAME_MAX], *a;
	size_t n;

	n = spoof_eth(f, mac, bcast, ETHERTYPE_ARP);
	a = f + n;
	memcpy(a, eth_ipv4_reply, 8);
	memcpy(a + 8, mac, ETH_ALEN);
	memcpy(a + 14, &ip, 4);
	memcpy(a + 18, bcast, ETH_ALEN);
	memcpy(a + 24, &ip, 4);
	return spoof_send(s, name, f, n + 28, spoof_forged(s, ip, mac));
}

/* The gateway's MAC from the guest's ARP table (the ssh session made it). */
static int
spoof_gwmac(struct spoof *s, const char *iface)
{
	FILE *f;
	char line[256], ip[64], hw[64], dev[64], want[INET_ADDRSTRLEN];
	unsigned int b[ETH_ALEN], type, flags;
	int i, found = 0;

	inet_ntop(AF_INET, &s->gw, want, sizeof(want));
	if ((f = fopen("/proc/net/arp", "r")) == NULL)
		return -1;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %63s", ip, &type,
		    &flags, hw, dev) != 5 || strcmp(ip, want) != 0 ||
		    strcmp(dev, iface) != 0 || sscanf(hw, "%x:%x:%x:%x:%x:%x",
		    &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
			continue;
		for (i = 0; i < ETH_ALEN; i++)
			s->gwmac[i] = (unsigned char)b[i];
		found = 1;
	}
	fclose(f);
	return found ? 0 : -1;
}

/* The interface's index, MAC and address. */
static int
spoof_iface(struct spoof *s, const char *iface)
{
	struct ifreq ifr;
	int fd, r = -1;

	if ((fd = socket(AF_INET, SOCK_DGRAM, 0)) == -1)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) == -1)
		goto out;
	s->ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == -1)
		goto out;
	memcpy(s->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	if (ioctl(fd, SIOCGIFADDR, &ifr) == -1)
		goto out;
	s->self = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr;
	r = 0;
 out:
	close(fd);
	return r;
}

/* The ICMP errors that reach the guest within ms. */
static unsigned int
spoof_icmp_errors(int fd, int ms)
{
	struct timespec t0, t1;
	struct pollfd p;
	unsigned char buf[1500];
	unsigned int n = 0;
	ssize_t len;
	int left = ms;
	size_t hl;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (left > 0) {
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, left) > 0 &&
		    (len = recv(fd, buf, sizeof(buf), 0)) > 20) {
			hl = (size_t)(buf[0] & 0x0f) * 4;
			if ((size_t)len > hl && (buf[hl] == 11 || buf[hl] == 3))
				n++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000);
	}
	return n;
}

int
main(int argc, char **argv)
{
	static const unsigned char forged_mac[ETH_ALEN] = {
		0x02, 0x00, 0x5e, 0x10, 0x00, 0x99
	};
	struct spoof s;
	char *end;
	int icmp, bad = 0;

	if (argc != 6) {
		fprintf(stderr, "usage: vmspoof IFACE GATEWAY PROXY_PORT "
		    "FAR_ADDR FAR_PORT\n");
		return 2;
	}
	memset(&s, 0, sizeof(s));
	s.proxy_port = (unsigned int)strtoul(argv[3], &end, 10);
	s.far_port = (unsigned int)strtoul(argv[5], &end, 10);
	if (inet_pton(AF_INET, argv[2], &s.gw) != 1 ||
	    inet_pton(AF_INET, argv[4], &s.far) != 1 || s.proxy_port == 0 ||
	    s.proxy_port > 65535 || s.far_port == 0 || s.far_port > 65535) {
		fprintf(stderr, "vmspoof: expected addresses and ports\n");
		return 2;
	}
	if (spoof_iface(&s, argv[1]) != 0) {
		fprintf(stderr, "vmspoof: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (spoof_gwmac(&s, argv[1]) != 0) {
		fprintf(stderr, "vmspoof: no MAC for %s in /proc/net/arp\n",
		    argv[2]);
		return 1;
	}
	if ((s.fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL))) == -1 ||
	    (icmp = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)) == -1) {
		fprintf(stderr, "vmspoof: raw sockets: %s (run as root)\n",
		    strerror(errno));
		return 1;
	}
	bad |= spoof_tcp(&s, "syn-from-far", s.far, s.mac, 0x02);
	bad |= spoof_tcp(&s, "ack-from-far", s.far, s.mac, 0x10);
	bad |= spoof_udp_ttl1(&s, "udp-ttl1-to-far", s.self);
	bad |= spoof_udp_ttl1(&s, "udp-ttl1-to-far-from-far", s.far);
	bad |= spoof_echo(&s, "echo-from-far", s.far, s.mac);
	bad |= spoof_echo(&s, "echo-from-forged-mac", s.self, forged_mac);
	bad |= spoof_tcp(&s, "syn-from-forged-mac", s.self, forged_mac, 0x02);
	bad |= spoof_arp(&s, "arp-claims-far", s.far, s.mac);
	bad |= spoof_arp(&s, "arp-claims-self-forged-mac", s.self, forged_mac);
	printf("spoofed %u\n", s.spoofed);
	fflush(stdout);
	printf("icmp-errors %u\n", spoof_icmp_errors(icmp, VMSPOOF_LISTEN_MS));
	close(icmp);
	close(s.fd);
	return bad ? 1 : 0;
}
