build-reduce/engine/device.o: engine/device.c engine/ember.h \
 engine/backend.h
engine/ember.h:
engine/backend.h:
