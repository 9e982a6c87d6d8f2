#!/usr/bin/env python3
"""Reads a TensorBoard event file (or, with --examples, a TFRecord file of
tf.train.Example) without TensorFlow or protobuf.

Checks the TFRecord framing of every record (u64 LE length, masked CRC-32C
of the length, data, masked CRC-32C of the data; its own CRC-32C table) and
decodes tensorflow.Event, Summary and Summary.Value from the field numbers
in TensorFlow's public event.proto and summary.proto:

  Event   { double wall_time = 1; int64 step = 2; string file_version = 3;
            bytes graph_def = 4; Summary summary = 5; ... }
  Summary { repeated Value value = 1; }
  Value   { string tag = 1; float simple_value = 2; ... }

Prints JSON: {"file_version": ..., "scalars": [{"step", "tag", "value",
"wall_time"}, ...], "truncated_at": offset or null}. A record cut short at
the end (a writer still writing, or killed) is reported as truncated_at and
is not an error; a checksum mismatch or malformed proto is: a message on
stderr naming the offset, exit status 1.

With --examples, the records are tf.train.Example instead (example.proto:
Example { Features features = 1; } Features { map<string, Feature>
feature = 1; } Feature { ... FloatList float_list = 2; ... } FloatList
{ repeated float value = 1 [packed = true]; }), and it prints
{"examples": [{name: [float, ...]}, ...], "truncated_at": ...} with each
record's float_list features (other kinds are left out).

Usage: read_events.py [--examples] FILE
"""
import json
import struct
import sys


def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


class Corrupt(Exception):
    pass


def records(data):
    """Yields (offset, payload); returns the truncation offset or None."""
    off = 0
    while off < len(data):
        if len(data) - off < 12:
            return off
        (length,) = struct.unpack_from("<Q", data, off)
        (lcrc,) = struct.unpack_from("<I", data, off + 8)
        if masked(crc32c(data[off:off + 8])) != lcrc:
            raise Corrupt("record at offset %d: length checksum mismatch" % off)
        if len(data) - off - 12 < length + 4:
            return off
        payload = data[off + 12:off + 12 + length]
        (dcrc,) = struct.unpack_from("<I", data, off + 12 + length)
        if masked(crc32c(payload)) != dcrc:
            raise Corrupt("record at offset %d: data checksum mismatch" % off)
        yield off, payload
        off += 16 + length
    return None


def varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise Corrupt("varint runs past the end of a message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise Corrupt("varint longer than 10 bytes")


def fields(buf):
    """Yields (field number, wire type, value) of one message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise Corrupt("unsupported wire type %d" % wire)
        if pos > len(buf):
            raise Corrupt("field %d runs past the end of a message" % field)
        yield field, wire, value


def decode_value(buf):
    tag, value = None, None
    for field, wire, v in fields(buf):
        if field == 1 and wire == 2:
            tag = v.decode("utf-8")
        elif field == 2 and wire == 5:
            (value,) = struct.unpack("<f", v)
    return tag, value


def decode_event(buf):
    event = {"wall_time": 0.0, "step": 0, "file_version": None, "values": []}
    for field, wire, v in fields(buf):
        if field == 1 and wire == 1:
            (event["wall_time"],) = struct.unpack("<d", v)
        elif field == 2 and wire == 0:
            event["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif field == 3 and wire == 2:
            event["file_version"] = v.decode("utf-8")
        elif field == 5 and wire == 2:
            for f, w, value in fields(v):
                if f == 1 and w == 2:
                    event["values"].append(decode_value(value))
    return event


def decode_all(path, decode):
    """decode(payload) of each record of path, and the truncation offset
    or None."""
    with open(path, "rb") as f:
        data = f.read()
    out, gen = [], records(data)
    while True:
        try:
            off, payload = next(gen)
        except StopIteration as stop:
            return out, stop.value
        try:
            out.append(decode(payload))
        except Corrupt as e:
            raise Corrupt("record at offset %d: %s" % (off, e))


def read(path):
    events, truncated_at = decode_all(path, decode_event)
    out = {"file_version": None, "scalars": [], "truncated_at": truncated_at}
    for event in events:
        if event["file_version"] is not None and out["file_version"] is None:
            out["file_version"] = event["file_version"]
        for tag, value in event["values"]:
            if value is not None:
                out["scalars"].append({"step": event["step"], "tag": tag,
                                       "value": value,
                                       "wall_time": event["wall_time"]})
    return out


def submessages(buf, number):
    return [v for field, wire, v in fields(buf) if field == number and wire == 2]


def floats(buf):
    values = []
    for field, wire, v in fields(buf):
        if field == 1 and wire == 2:  # packed
            values += struct.unpack("<%df" % (len(v) // 4), v)
        elif field == 1 and wire == 5:
            values += struct.unpack("<f", v)
    return values


def decode_example(buf):
    out = {}
    for features in submessages(buf, 1):
        for entry in submessages(features, 1):
            keys = submessages(entry, 1)
            for feature in submessages(entry, 2):
                for float_list in submessages(feature, 2):
                    out[keys[0].decode("utf-8")] = floats(float_list)
    return out


def read_examples(path):
    examples, truncated_at = decode_all(path, decode_example)
    return {"examples": examples, "truncated_at": truncated_at}


def main(argv):
    examples = len(argv) == 3 and argv[1] == "--examples"
    if len(argv) != 2 and not examples:
        sys.stderr.write("usage: read_events.py [--examples] FILE\n")
        return 2
    try:
        out = read_examples(argv[2]) if examples else read(argv[1])
    except Corrupt as e:
        sys.stderr.write("%s: %s\n" % (argv[-1], e))
        return 1
    except OSError as e:
        sys.stderr.write("%s: %s\n" % (argv[-1], e.strerror))
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
