# embed.cmake - write the bytes of IN as a C array NAME (and NAME_len)
# into OUT: the OpenAPI document served at /v1/openapi.json.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from ${IN} by daemon/embed.cmake */\n#include <stddef.h>\nconst unsigned char ${NAME}[] = {\n${body}\n};\nconst size_t ${NAME}_len = ${len};\n")
