/* SPDX-License-Identifier: MIT
 * --verify data pattern: every byte is a function of (seed, offset), so a receiver can check any
 * message or region without knowing which message it was.
 */
#ifndef MRPERF_PATTERN_H
#define MRPERF_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Byte at offset off of the pattern for seed. */
uint8_t mr_pattern_byte(uint32_t seed, uint64_t off);
void mr_pattern_fill(uint32_t seed, void *buf, size_t len);
/* Number of bytes in buf that differ from the pattern. */
uint64_t mr_pattern_check(uint32_t seed, const void *buf, size_t len);

#endif
