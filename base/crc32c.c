/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven,
 * eight bytes at a time. The table is built once, thread-safely. In base/
 * because TFRecord files, event files and checkpoints all use it. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "pasco/tfrecord.h"

static uint32_t       table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void
table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++) {
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
		}
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++) {
		for (int t = 1; t < 8; t++) {
			table[t][i] = (table[t - 1][i] >> 8) ^
			              table[0][table[t - 1][i] & 0xff];
		}
	}
}

uint32_t
pasco_crc32c(const void *data, size_t len)
{
	return pasco_crc32c_extend(0, data, len);
}

uint32_t
pasco_crc32c_extend(uint32_t crc0, const void *data, size_t len)
{
	const uint8_t *p   = data;
	uint32_t       crc = crc0 ^ 0xffffffffu;
	pthread_once(&table_once, table_init);
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4); /* little-endian hosts */
		memcpy(&hi, p + 4, 4);
		lo ^= crc;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	}
	return crc ^ 0xffffffffu;
}

uint32_t
pasco_crc32c_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
