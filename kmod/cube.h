/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube.ko internal declarations shared between the module's files.
 */
#ifndef _CUBE_INTERNAL_H
#define _CUBE_INTERNAL_H

#include <linux/cube.h>

#endif /* _CUBE_INTERNAL_H */
