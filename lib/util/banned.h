/*
 * banned.h - functions the library must not use (after git's banned.h).
 * Every library source includes it after its other headers (a forced
 * include, first, would rename the system headers' own declarations).
 */
#ifndef HP_BANNED_H
#define HP_BANNED_H

#define HP_BANNED(func) sorry_##func##_is_banned_in_hetpool

#undef strcpy
#define strcpy(x, y) HP_BANNED(strcpy)
#undef strcat
#define strcat(x, y) HP_BANNED(strcat)
#undef sprintf
#define sprintf(...) HP_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) HP_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) HP_BANNED(strtok)
#undef atoi
#define atoi(x) HP_BANNED(atoi)
#undef atol
#define atol(x) HP_BANNED(atol)
#undef gets
#define gets(x) HP_BANNED(gets)

#endif
