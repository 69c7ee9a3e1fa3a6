"""The channel token of a trial (common/chantoken.c), written again for the tests:
python3 chantoken.py <experiment token> <trial id>."""
import sys

M = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def siphash24(key, data):
    k0 = int.from_bytes(key[:8], 'little')
    k1 = int.from_bytes(key[8:], 'little')
    v = [0x736f6d6570736575 ^ k0, 0x646f72616e646f6d ^ k1, 0x6c7967656e657261 ^ k0, 0x7465646279746573 ^ k1]

    def rnd():
        v[0] = (v[0] + v[1]) & M; v[1] = _rotl(v[1], 13); v[1] ^= v[0]; v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M; v[3] = _rotl(v[3], 16); v[3] ^= v[2]
        v[0] = (v[0] + v[3]) & M; v[3] = _rotl(v[3], 21); v[3] ^= v[0]
        v[2] = (v[2] + v[1]) & M; v[1] = _rotl(v[1], 17); v[1] ^= v[2]; v[2] = _rotl(v[2], 32)

    full = len(data) - len(data) % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], 'little')
        v[3] ^= m; rnd(); rnd(); v[0] ^= m
    b = (len(data) << 56) & M | int.from_bytes(data[full:], 'little')
    v[3] ^= b; rnd(); rnd(); v[0] ^= b
    v[2] ^= 0xff
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def chan_token(exp_token, trial_id):
    # the experiment token is 32 hex digits: its 16 bytes are the key
    assert len(exp_token) == 32
    key = bytes.fromhex(exp_token)
    return ''.join('%016x' % siphash24(key, b'trialq-chan-%d:' % h + trial_id.encode()) for h in (1, 2))


if __name__ == '__main__':
    assert '%016x' % siphash24(bytes(range(16)), bytes(range(15))) == 'a129ca6149be45e5'
    print(chan_token(sys.argv[1], sys.argv[2]))
