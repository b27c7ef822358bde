build-elem/engine/random.o: engine/random.c engine/internal.h \
 engine/ember.h engine/backend.h
engine/internal.h:
engine/ember.h:
engine/backend.h:
