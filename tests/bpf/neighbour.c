// SPDX-License-Identifier: GPL-2.0
// The lab's neighbour in a device's tc egress chain: what a CNI's or a host firewall's
// program does there, reduced to what the tests look at. It counts every packet it sees,
// drops TCP to one port (its "policy"), and otherwise returns the verdict it was given:
// TC_ACT_OK / TCX_PASS (0) ends the chain, as Cilium's programs do; TC_ACT_UNSPEC /
// TCX_NEXT (-1) lets the next program or filter see the packet, as Calico's do.
// Built by the lab-tc fixture with `clang -O2 -g -target bpf`, loaded (section "classifier":
// aya 0.14 reads libbpf's "tc" as no program) and attached by it
// (tcx or a clsact filter) with aya.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// [0]: the TCP destination port it drops (host order), [1]: its verdict for the rest.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __s32);
} NEIGHBOUR_CONFIG SEC(".maps");

// [0]: packets seen, [1]: packets dropped.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} NEIGHBOUR_COUNTS SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *n = bpf_map_lookup_elem(&NEIGHBOUR_COUNTS, &i);
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline int dport(struct __sk_buff *skb)
{
	__u8 proto;
	__u32 l4;
	__u16 port;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		__u8 vihl;
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) ||
		    bpf_skb_load_bytes(skb, ETH_HLEN + 9, &proto, 1))
			return -1;
		l4 = ETH_HLEN + (vihl & 0x0f) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &proto, 1))
			return -1;
		l4 = ETH_HLEN + 40;
	} else {
		return -1;
	}
	if (proto != IPPROTO_TCP || bpf_skb_load_bytes(skb, l4 + 2, &port, 2))
		return -1;
	return bpf_ntohs(port);
}

SEC("classifier")
int lab_neighbour(struct __sk_buff *skb)
{
	__u32 k_port = 0, k_verdict = 1;
	__s32 *drop = bpf_map_lookup_elem(&NEIGHBOUR_CONFIG, &k_port);
	__s32 *verdict = bpf_map_lookup_elem(&NEIGHBOUR_CONFIG, &k_verdict);

	count(0);
	if (!drop || !verdict)
		return -1;
	if (*drop > 0 && dport(skb) == *drop) {
		count(1);
		return 2; // TC_ACT_SHOT, TCX_DROP
	}
	return *verdict;
}

char LICENSE[] SEC("license") = "GPL";
