build-elem/engine/elementwise.o: engine/elementwise.c engine/internal.h \
 engine/ember.h engine/backend.h
engine/internal.h:
engine/ember.h:
engine/backend.h:
