build-elem/engine/view.o: engine/view.c engine/internal.h engine/ember.h \
 engine/backend.h
engine/internal.h:
engine/ember.h:
engine/backend.h:
