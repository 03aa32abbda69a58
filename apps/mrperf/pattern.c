/* SPDX-License-Identifier: MIT
 * --verify data pattern (see pattern.h).
 */
#include "pattern.h"

/* splitmix64 finaliser over (seed, offset / 8): cheap, and unlike a counter pattern a shifted
 * or repeated block does not match, so misplaced data (wrong offset) is detected too. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint8_t mr_pattern_byte(uint32_t seed, uint64_t off)
{
	return (uint8_t)(mix((uint64_t)seed << 40 ^ (off >> 3)) >> (8 * (off & 7)));
}

void mr_pattern_fill(uint32_t seed, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = mr_pattern_byte(seed, i);
}

uint64_t mr_pattern_check(uint32_t seed, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += p[i] != mr_pattern_byte(seed, i);
	return bad;
}
