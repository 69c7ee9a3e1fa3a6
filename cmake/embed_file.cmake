# Writes OUT: the file IN as a NUL-terminated C array named NAME (a script the workers
# ship to the machines that run trials, such as sdk/chanrelay/trialq_chanrelay.py).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
file(WRITE ${OUT}.tmp "/* generated from ${IN}; do not edit */\nconst char ${NAME}[] = {${hex}0x00};\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
