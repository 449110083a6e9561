/* render.h: --render — screens as cells, kept frame by frame, written as an animated SVG or an asciicast, no curses.
 *
 * The full-screen view plays a demo on a virtual terminal (tuirender.c reads
 * ncurses' own screen after each frame: character, attributes, colours); each
 * screen that differs from the one before becomes a frame with the time the
 * demo's clock says. The files:
 *   .svg   one self-contained SVG: a monospaced grid (every run of text placed
 *          at its column, a double-width character over two cells; the block
 *          elements U+2580–U+259F — a legend's bars, a monochrome heatmap's
 *          shades — drawn as rectangles, their text kept but invisible, so
 *          the picture does not depend on the font having them), one <g>
 *          per frame shown in turn by SMIL <set> on a clock that loops; the
 *          first frame is what a viewer without animation shows. Each frame
 *          carries data-t (seconds) and data-line (the demo line last run).
 *          Text is escaped for XML; characters XML forbids become U+FFFD.
 *   .gif, .mp4  through rsvg-convert and ffmpeg (render_write_video).
 *   .cast  asciicast v2 (record.h): each frame a full redraw with absolute
 *          cursor moves and 24-bit colours — no scroll regions, no insert or
 *          delete of lines — so any player replays it.
 */
#ifndef ATTNVIZ_RENDER_H
#define ATTNVIZ_RENDER_H

#include <stdint.h>

#include "base/strbuf.h"

enum {
	RENDER_BOLD = 1 << 0,
	RENDER_UNDERLINE = 1 << 1,
	RENDER_ITALIC = 1 << 2,
	RENDER_WIDE = 1 << 3, /* the first cell of a double-width character */
	RENDER_CONT = 1 << 4  /* the second cell of one (drawn by the first) */
};

typedef struct RenderCell {
	uint32_t ch;      /* a Unicode code point; ' ' for an empty cell */
	uint32_t fg, bg;  /* 0xRRGGBB, attributes (reverse, dim) already applied */
	unsigned flags;   /* RENDER_* */
} RenderCell;

typedef struct Render Render;

/* Frames of width × height cells; the colours a cell without its own are drawn in. NULL when out of memory. */
Render *render_new(int width, int height, uint32_t fg, uint32_t bg);
void render_free(Render *r);
/* What a render's frames may hold together: frames × width × height cells of sizeof(RenderCell) bytes. */
#define RENDER_MAX_BYTES ((size_t)256 << 20)
#define RENDER_TOO_BIG (-2)
/*
 * The screen at ms milliseconds (never before the last frame) after demo line `line`: a new frame when it
 * differs from the last; a frame at the same time as the last replaces it (nobody could have seen that one).
 * Returns 0, -1 when out of memory, or RENDER_TOO_BIG (nothing allocated) when one more frame would take
 * the frames past RENDER_MAX_BYTES.
 */
int render_frame(Render *r, long long ms, int line, const RenderCell *cells);
/* The end: the last frame shows until ms. */
void render_end(Render *r, long long ms);
/* How many frames. */
int render_count(const Render *r);
/*
 * The terminal output that turns screen prev (NULL: anything) into cells: each row that differs written whole,
 * from its first column, by an absolute cursor move, in 24-bit colours (what an asciicast frame holds).
 */
void render_cast_rows(StrBuf *b, int width, int height, const RenderCell *cells, const RenderCell *prev);
/* Write the SVG or the asciicast (record.h's file handling: PATH replaced whole or left as it was). 0, or -1 with *err. */
int render_write_svg(const Render *r, const char *path, char **err);
/* Frame i's start and end (ms). */
void render_span(const Render *r, int i, long long *start, long long *end);
/* Frame i alone as a still SVG (what a GIF's or an MP4's frame is made from). 0, or -1 with *err. */
int render_write_frame_svg(const Render *r, int i, const char *path, char **err);
/*
 * video.c: the frames as a GIF or an MP4 (by path's ending), each frame rasterised by rsvg-convert and
 * joined by ffmpeg's concat demuxer with its own duration (GIF: palettegen/paletteuse; MP4: H.264,
 * yuv420p), in a private temporary directory removed afterwards; path replaced whole at the end;
 * zoom pixels per SVG pixel (--scale N: sharp on a large slide; 0 or 1: as drawn).
 * 0, or -1 with *err.
 */
int render_write_video(const Render *r, const char *path, double zoom, char **err);
/* An SVG (svg's len bytes) as a PNG at path, zoom pixels per SVG pixel, through rsvg-convert
 * (`--export png`): made in a private temporary directory, path replaced whole. 0, or -1 with *err. */
int render_write_png(const char *svg, size_t len, const char *path, double zoom, char **err);
/* 1 when path ends in .gif or .mp4. */
int render_is_video(const char *path);
/* NULL when every program a video (.gif, .mp4) or a PNG (.png: rsvg-convert alone) needs is on PATH;
 * else a heap message naming the missing ones and their Debian packages. */
char *render_video_missing(const char *path);
int render_write_cast(const Render *r, const char *path, const char *title, double idle_limit, char **err);

#endif
