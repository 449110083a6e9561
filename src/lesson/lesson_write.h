/* lesson_write.h: a Lesson written back as a lesson file, the reader's inverse (`save`). */
#ifndef ATTNVIZ_LESSON_WRITE_H
#define ATTNVIZ_LESSON_WRITE_H

#include "lesson/lesson.h"

/*
 * l as it is now (edits and all) as a lesson file (lessons/FORMAT.md) that
 * lesson_load reads back as the same lesson: every key concrete, every
 * number exact, its steps, quizzes and compare variant, a stack's layers
 * and an encoder–decoder's parts. A heap string (pretty JSON) ending in a
 * newline; NULL with *err (a heap string) when out of memory.
 */
char *lesson_write_json(const Lesson *l, char **err);

#endif
