import 'reflect-metadata';
import { runBusService } from '@th/bus';
import { ControlPlaneModule } from '@th/control-plane';

runBusService('control-plane', 8083, ControlPlaneModule);
