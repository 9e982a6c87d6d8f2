/*
 * TensorBoard event files, in TensorFlow's format: a TFRecord file (each
 * record a little-endian u64 length, its masked CRC-32C, the bytes, their
 * masked CRC-32C) of serialized tensorflow.Event protos. The first event
 * carries file_version "brain.Event:2"; each scalar is an Event with its
 * wall time, step and a Summary holding one Value {tag, simple_value}.
 * The file is named as TensorFlow 2's summary writer names it:
 * DIR/events.out.tfevents.<10-digit seconds>.<hostname>.<pid>.<n>.v2, n
 * counting the writers this process opened. `tensorboard --logdir DIR`
 * reads it (and every directory below DIR, each a run).
 *
 * Each event is written to the file as it is added (one write), so a
 * process that dies leaves every event before it readable; flush also
 * fsyncs. All functions are thread-safe (one mutex per writer), except
 * close: nothing else may use the writer during or after it.
 */
#ifndef PASCO_SUMMARY_H
#define PASCO_SUMMARY_H

#include <stdint.h>

#include "error.h"

typedef struct pasco_summary_writer pasco_summary_writer;

/* Creates dir (and its parents) if needed and a new event file in it,
 * then writes and flushes the file_version event. PASCO_EINVAL for a NULL
 * or empty dir, PASCO_EIO when the directory or file cannot be created;
 * *out is NULL on failure. Message: pasco_summary_last_error. */
int pasco_summary_writer_open(pasco_summary_writer **out, const char *dir);

/* Appends one scalar event (wall time now, step, tag, value; TensorBoard
 * stores value as a float32). tag must be non-empty and under 4096 bytes
 * (PASCO_EINVAL); a failed write is PASCO_EIO, and the writer refuses
 * further events after one (PASCO_EIO again). */
int pasco_summary_scalar(
    pasco_summary_writer *w, const char *tag, int64_t step, double value);

/* fsyncs what was written. PASCO_EIO on failure. */
int pasco_summary_flush(pasco_summary_writer *w);

/* Flushes, closes the file and frees the writer. NULL is ignored. */
void pasco_summary_writer_close(pasco_summary_writer *w);

/* The event file's path, owned by the writer (valid until close). */
const char *pasco_summary_writer_path(const pasco_summary_writer *w);

/* The message of the last failed summary call on this thread ("" if
 * none). */
const char *pasco_summary_last_error(void);

#endif
