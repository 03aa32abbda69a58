// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* tc (clsact ingress/egress) impairment for RoCE v2: drops UDP/4791 packets with a configured
 * probability and CE-marks ECT ones with another, in the kernel, for rxe interop tests on a
 * kernel without netem. Parameters live in an array map (slot 0) the loader writes; counters
 * are per-CPU. Probabilities are thresholds on bpf_get_prandom_u32(): p * 2^32. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "mr_tc_impair.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mr_bpf_cfg);
} mr_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MR_BPF_NR_STATS);
	__type(key, __u32);
	__type(value, __u64);
} mr_stats SEC(".maps");

static __always_inline void count(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&mr_stats, &k);

	if (v)
		*v += 1;
}

SEC("tc")
int mr_tc_impair(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	struct mr_bpf_cfg *cfg;
	__u32 key = 0, l3 = sizeof(*eth);
	__u8 ecn;
	int v6;

	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + l3;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5)
			return TC_ACT_OK;
		udp = (void *)(ip + 1);
		ecn = ip->tos & 3;
		v6 = 0;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return TC_ACT_OK;
		udp = (void *)(ip6 + 1);
		ecn = (ip6->flow_lbl[0] >> 4) & 3;
		v6 = 1;
	} else {
		return TC_ACT_OK;
	}
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(MR_BPF_ROCE_PORT))
		return TC_ACT_OK; /* IBTA A17.2.2: RoCE v2 is UDP destination port 4791 */
	count(MR_BPF_STAT_SEEN);
	cfg = bpf_map_lookup_elem(&mr_cfg, &key);
	if (!cfg)
		return TC_ACT_OK;
	if (cfg->loss_thresh && bpf_get_prandom_u32() < cfg->loss_thresh) {
		count(MR_BPF_STAT_DROPPED);
		return TC_ACT_SHOT;
	}
	/* RFC 3168 5: only ECT(0)/ECT(1) may become CE; the ICRC masks TOS (IBA A17.3.3). */
	if (cfg->ecn_thresh && (ecn == 1 || ecn == 2) && bpf_get_prandom_u32() < cfg->ecn_thresh) {
		if (v6) {
			__u8 b;

			if (bpf_skb_load_bytes(skb, l3 + 1, &b, 1) < 0)
				return TC_ACT_OK;
			b |= 0x30;
			bpf_skb_store_bytes(skb, l3 + 1, &b, 1, 0);
		} else {
			__u16 oldw, neww;

			if (bpf_skb_load_bytes(skb, l3, &oldw, 2) < 0)
				return TC_ACT_OK;
			neww = oldw | bpf_htons(3);
			bpf_l3_csum_replace(skb, l3 + offsetof(struct iphdr, check), oldw, neww, 2);
			bpf_skb_store_bytes(skb, l3, &neww, 2, 0);
		}
		count(MR_BPF_STAT_MARKED);
	} else if (cfg->ecn_thresh && ecn == 0) {
		count(MR_BPF_STAT_NOT_ECT);
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
