build-shell/engine/cpu/binary.o: engine/cpu/binary.c engine/cpu/cpu.h \
 engine/cpu/../internal.h engine/cpu/../ember.h engine/cpu/../backend.h
engine/cpu/cpu.h:
engine/cpu/../internal.h:
engine/cpu/../ember.h:
engine/cpu/../backend.h:
