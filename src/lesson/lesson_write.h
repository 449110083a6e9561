/* lesson_write.h: a Lesson written back as a lesson file, the reader's inverse (`save`). */
#ifndef ATTNVIZ_LESSON_WRITE_H
#define ATTNVIZ_LESSON_WRITE_H

#include "lesson/lesson.h"

/*
 * l as a lesson file (lessons/FORMAT.md) that lesson_load reads back as the
 * same lesson: every number exact, its steps, quizzes and compare variant,
 * a stack's layers and an encoder–decoder's parts as the file gave them.
 * A heap string ending in a newline; NULL with *err (a heap string) when
 * out of memory.
 */
char *lesson_write_json(const Lesson *l, char **err);

#endif
