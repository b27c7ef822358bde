build-elem/engine/cpu/random.o: engine/cpu/random.c engine/cpu/cpu.h \
 engine/cpu/../internal.h engine/cpu/../ember.h engine/cpu/../backend.h
engine/cpu/cpu.h:
engine/cpu/../internal.h:
engine/cpu/../ember.h:
engine/cpu/../backend.h:
